/* The per-peer bandwidth budget: see budget.h. */
#include "budget.h"
#include <time.h>

int64_t mm_budget_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int mm_budget_init(mm_budget *b, uint64_t rate, uint64_t burst, int64_t now_ns) {
  if (rate == 0) return -1;
  b->rate = (double)rate;
  b->burst = burst ? (double)burst : (double)rate / 10.0;
  if (b->burst < 65536.0) b->burst = 65536.0;
  b->head = NULL;
  b->pool = 0;
  b->last_ns = now_ns;
  b->users = 0;
  b->sent = 0;
  return pthread_mutex_init(&b->mu, NULL) == 0 ? 0 : -1;
}

void mm_budget_destroy(mm_budget *b) { pthread_mutex_destroy(&b->mu); }

static void to_pool(mm_budget *b, double n) {
  b->pool += n;
  if (b->pool > b->burst) b->pool = b->burst;
}

/* Split rate x elapsed equally between the joined users; over a user's cap it overflows to the pool (locked). */
static void refill(mm_budget *b, int64_t now_ns) {
  if (now_ns <= b->last_ns) return;
  double add = b->rate * (double)(now_ns - b->last_ns) / 1e9;
  b->last_ns = now_ns;
  if (b->users == 0) { to_pool(b, add); return; }
  double per = add / b->users, cap = b->burst / b->users, over = 0;
  for (mm_budget_user *u = b->head; u; u = u->next) {
    u->credit += per;
    if (u->credit > cap) { over += u->credit - cap; u->credit = cap; }
  }
  to_pool(b, over);
}

void mm_budget_join(mm_budget *b, mm_budget_user *u, int64_t now_ns) {
  pthread_mutex_lock(&b->mu);
  refill(b, now_ns);
  u->credit = 0;
  u->joined = 1;
  u->prev = NULL;
  u->next = b->head;
  if (b->head) b->head->prev = u;
  b->head = u;
  b->users++;
  pthread_mutex_unlock(&b->mu);
}

void mm_budget_leave(mm_budget *b, mm_budget_user *u, int64_t now_ns) {
  pthread_mutex_lock(&b->mu);
  if (u->joined) {
    refill(b, now_ns);
    to_pool(b, u->credit);
    if (u->prev) u->prev->next = u->next; else b->head = u->next;
    if (u->next) u->next->prev = u->prev;
    u->prev = u->next = NULL;
    u->credit = 0;
    u->joined = 0;
    b->users--;
  }
  pthread_mutex_unlock(&b->mu);
}

static int64_t clamp_wait(double ns) {
  if (ns < 100000.0) return 100000;
  if (ns > 50000000.0) return 50000000;
  return (int64_t)ns;
}

uint64_t mm_budget_take(mm_budget *b, mm_budget_user *u, uint64_t want, int64_t now_ns, int64_t *wait_ns) {
  return mm_budget_take_least(b, u, want, 1, now_ns, wait_ns);
}

uint64_t mm_budget_take_least(mm_budget *b, mm_budget_user *u, uint64_t want, uint64_t least, int64_t now_ns, int64_t *wait_ns) {
  if (want == 0 || !u->joined) { *wait_ns = 0; return 0; }
  pthread_mutex_lock(&b->mu);
  refill(b, now_ns);
  double w = (double)want, own = 0, from = 0;
  /* what the user waits for when refused: its own share grown by what it wants, at most a quarter of its cap (waking
   * then leaves three quarters of the cap to absorb a late wake-up, a loaded machine, before any of its share is
   * lost); `least` is never more than that, so it is always reached */
  double q = b->burst / b->users / 4, need = w < q ? w : q, lo = (double)least < need ? (double)least : need;
  if (lo < 1.0) lo = 1.0;
  if (u->credit >= 1.0) { own = u->credit < w ? (double)(uint64_t)u->credit : w; u->credit -= own; }
  if (own < w && b->pool >= 1.0) {
    /* from the pool at most a fair slice at once, so one greedy user cannot drain it */
    double slice = b->burst / b->users;
    from = w - own;
    if (from > slice) from = slice;
    if (from > b->pool) from = (double)(uint64_t)b->pool;
    b->pool -= from;
  }
  if (own + from < lo) { u->credit += own; b->pool += from; own = from = 0; } /* too little to be worth a write */
  uint64_t g = (uint64_t)(own + from);
  b->sent += g;
  if (g == 0) *wait_ns = clamp_wait((need - u->credit) * b->users * 1e9 / b->rate);
  else *wait_ns = 0;
  pthread_mutex_unlock(&b->mu);
  return g;
}

void mm_budget_refund(mm_budget *b, mm_budget_user *u, uint64_t n) {
  pthread_mutex_lock(&b->mu);
  u->credit += (double)n;
  b->sent -= n < b->sent ? n : b->sent;
  pthread_mutex_unlock(&b->mu);
}

uint64_t mm_budget_sent(mm_budget *b) {
  pthread_mutex_lock(&b->mu);
  uint64_t s = b->sent;
  pthread_mutex_unlock(&b->mu);
  return s;
}
