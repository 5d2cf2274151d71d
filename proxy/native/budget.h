/* A bandwidth budget shared by every tunnel to one peer (issue 52 item 3), in bytes per second.
 * One mm_budget per peer; one mm_budget_user per tunnel direction that sends toward that peer. Each pump asks
 * mm_budget_take before it moves bytes and moves at most what it was given (or sleeps *wait_ns when given 0).
 * Fairness: every call refills by rate x elapsed and splits it equally between the joined users (O(users) under
 * the mutex: a few hundred additions per call at most); a user's credit is capped at burst / users, and what
 * overflows (an idle or slow user's share) goes to a shared pool any user may draw from, a fair slice per call,
 * so unused share is redistributed and a user that joins late gets its share from the next refill on.
 * Thread-safe (one mutex per budget); the clock is the caller's (CLOCK_MONOTONIC ns), so the same
 * API serves a thread per tunnel or an event loop. No privileges: it only decides how much to send. */
#ifndef MM_BUDGET_H
#define MM_BUDGET_H
#include <pthread.h>
#include <stdint.h>

typedef struct mm_budget_user {
  double credit;     /* bytes this user may still send from its own share */
  struct mm_budget_user *prev, *next;
  int joined;
} mm_budget_user;

typedef struct mm_budget {
  pthread_mutex_t mu;
  double rate;       /* bytes per second (> 0) */
  double burst;      /* bytes: most that may be sent at once after idleness */
  double pool;       /* overflowed credit anyone may draw from, <= burst */
  int64_t last_ns;   /* time of the last refill */
  int users;         /* joined users */
  mm_budget_user *head;
  uint64_t sent;     /* bytes granted in total (for the metrics) */
} mm_budget;

/* rate in bytes/s (> 0); burst in bytes (0: rate / 10, at least 64 KiB). Returns 0, or -1 for a bad rate. */
int mm_budget_init(mm_budget *b, uint64_t rate, uint64_t burst, int64_t now_ns);
void mm_budget_destroy(mm_budget *b);
void mm_budget_join(mm_budget *b, mm_budget_user *u, int64_t now_ns);
void mm_budget_leave(mm_budget *b, mm_budget_user *u, int64_t now_ns);
/* Bytes the user may send now, 1..want; or 0 with *wait_ns set to when to ask again (100 us .. 50 ms). */
uint64_t mm_budget_take(mm_budget *b, mm_budget_user *u, uint64_t want, int64_t now_ns, int64_t *wait_ns);
/* the same, granting nothing (and setting *wait_ns) while less than `least` bytes are available: `least` is capped at
 * what a refused user waits for (a quarter of its share of the burst), so it is always reached. The relays ask at
 * least a chunk worth a syscall: granted whatever had accrued, a greedy relay spun on writes of a hundred bytes. */
uint64_t mm_budget_take_least(mm_budget *b, mm_budget_user *u, uint64_t want, uint64_t least, int64_t now_ns, int64_t *wait_ns);
/* give back bytes granted but not sent (a short or refused write) */
void mm_budget_refund(mm_budget *b, mm_budget_user *u, uint64_t n);
/* bytes granted so far */
uint64_t mm_budget_sent(mm_budget *b);
int64_t mm_budget_now_ns(void);

#endif
