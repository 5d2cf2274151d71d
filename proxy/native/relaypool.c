/*
 * The spliced datapath's event pool (see relaypool.h). Each worker thread has one epoll set. A tunnel's two
 * sockets are registered once, edge-triggered for input, output and peer hang-up (no epoll_ctl while it runs:
 * the readiness flags of splice.h are set from the edges and cleared by EAGAIN, as the poll loop does); its cancel
 * eventfd level-triggered. Every wake-up takes a batch of events, and each ready tunnel then runs at most
 * RUN_ROUNDS passes before the next one (round robin: a bulk tunnel that is always ready cannot starve the
 * others). Timers (a budget that refused a direction, the salvage's end and its 1 ms checks that the kernel has
 * sent what it moved, the idle limit) are one min-heap per worker keyed by the tunnel's next deadline; the epoll
 * wait ends at the earliest. A tunnel is given to the worker with the fewest tunnels. Workers live as long as the process; min(2, CPUs) by default.
 */
#define _GNU_SOURCE
#include "relaypool.h"
#include "ioready.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_WORKERS 8
#define RUN_ROUNDS 8
#define BATCH 256
#define NO_DEADLINE INT64_MAX

typedef struct relay_worker {
  int ep, wake;                 /* epoll set; eventfd that says the submission queue has tunnels */
  pthread_mutex_t mu;
  splice_io_t *incoming;        /* submitted, not yet registered (under mu) */
  splice_io_t *runq, *runq_tail;
  splice_io_t **heap;           /* min-heap on pool.heap_key */
  int heap_n, heap_cap;
  int tunnels;                  /* registered or incoming (atomic) */
} relay_worker;

static relay_worker workers[MAX_WORKERS];
static int nworkers, want_threads, started_err;
static int pool_on = 1;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* ---- the timer heap ---- */
static void heap_swap(relay_worker *w, int i, int j) {
  splice_io_t *t = w->heap[i];
  w->heap[i] = w->heap[j];
  w->heap[j] = t;
  w->heap[i]->pool.heap_idx = i;
  w->heap[j]->pool.heap_idx = j;
}
static void heap_fix(relay_worker *w, int i) {
  while (i > 0 && w->heap[(i - 1) / 2]->pool.heap_key > w->heap[i]->pool.heap_key) { heap_swap(w, i, (i - 1) / 2); i = (i - 1) / 2; }
  for (;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < w->heap_n && w->heap[l]->pool.heap_key < w->heap[m]->pool.heap_key) m = l;
    if (r < w->heap_n && w->heap[r]->pool.heap_key < w->heap[m]->pool.heap_key) m = r;
    if (m == i) return;
    heap_swap(w, i, m);
    i = m;
  }
}
static void heap_remove(relay_worker *w, splice_io_t *p) {
  int i = p->pool.heap_idx;
  if (i < 0) return;
  p->pool.heap_idx = -1;
  if (i != --w->heap_n) {
    w->heap[i] = w->heap[w->heap_n];
    w->heap[i]->pool.heap_idx = i;
    heap_fix(w, i);
  }
}
/* the tunnel's next deadline is `key` (ms; NO_DEADLINE: none): 0, or -1 when the heap cannot grow */
static int heap_set(relay_worker *w, splice_io_t *p, int64_t key) {
  if (key == NO_DEADLINE) { heap_remove(w, p); return 0; }
  if (p->pool.heap_idx < 0) {
    if (w->heap_n == w->heap_cap) {
      int cap = w->heap_cap ? 2 * w->heap_cap : 64;
      splice_io_t **h = realloc(w->heap, (size_t)cap * sizeof *h);
      if (!h) return -1;
      w->heap = h;
      w->heap_cap = cap;
    }
    p->pool.heap_idx = w->heap_n;
    w->heap[w->heap_n++] = p;
  }
  p->pool.heap_key = key;
  heap_fix(w, p->pool.heap_idx);
  return 0;
}

/* the earliest of: a held budget direction (rounded up to ms), the salvage's next check, the idle limit */
static int64_t deadline(splice_io_t *p) {
  if (p->salvaging) return splice_salvage_wake(p);
  int64_t d = p->idle_ms > 0 ? p->last_ms + p->idle_ms : NO_DEADLINE;
  for (int k = 0; k < 2; k++) {
    int64_t h = p->held_until[k] ? (p->held_until[k] + 999999) / 1000000 : NO_DEADLINE;
    if (h < d) d = h;
  }
  return d;
}

static void runq_push(relay_worker *w, splice_io_t *p) {
  if (p->pool.queued || p->pool.done) return;
  p->pool.queued = 1;
  p->pool.next = NULL;
  if (w->runq_tail) w->runq_tail->pool.next = p; else w->runq = p;
  w->runq_tail = p;
}

enum { RUN_WAIT, RUN_AGAIN, RUN_END };

/* Run one tunnel after an event or its deadline: the salvage if one is under way, else up to RUN_ROUNDS passes.
 * An error reported by epoll is acted on once the passes stall (as the poll loop sees POLLERR only in its wait). */
static int run(splice_io_t *p) {
  if (p->pool.cancelled) { p->reason = R_CANCEL; return RUN_END; }
  for (int round = 0; round < RUN_ROUNDS; round++) {
    if (p->salvaging) return splice_salvage_step(p) ? RUN_WAIT : RUN_END;
    int progress = splice_pass(p);
    if (p->salvaging) continue;
    if (p->reason >= 0) return RUN_END;
    int64_t now = mm_now_ms();
    if (progress) { p->last_ms = now; continue; }
    for (int i = 0; i < 2; i++)
      if (p->err_seen[i]) { p->err_seen[i] = 0; splice_sockerr(p, i); break; }
    if (p->salvaging) continue;
    if (p->idle_ms > 0 && now >= p->last_ms + p->idle_ms) { p->reason = R_IDLE; return RUN_END; }
    return RUN_WAIT;
  }
  return RUN_AGAIN;
}

static void finish(relay_worker *w, splice_io_t *p) {
  p->pool.done = 1;
  heap_remove(w, p);
  epoll_ctl(w->ep, EPOLL_CTL_DEL, p->fd[0], NULL);
  epoll_ctl(w->ep, EPOLL_CTL_DEL, p->fd[1], NULL);
  epoll_ctl(w->ep, EPOLL_CTL_DEL, p->efd, NULL);
  splice_end(p);
  __atomic_sub_fetch(&w->tunnels, 1, __ATOMIC_RELAXED);
  p->pool.on_end(p, p->pool.arg);
}

/* a submitted tunnel: join its budgets, watch its sockets and its cancel eventfd, run it */
static void adopt(relay_worker *w, splice_io_t *p) {
  splice_begin(p);
  for (int i = 0; i < 3; i++) { p->pool.tag[i].p = p; p->pool.tag[i].which = i; }
  struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = &p->pool.tag[0] };
  int rc = epoll_ctl(w->ep, EPOLL_CTL_ADD, p->fd[0], &ev);
  ev.data.ptr = &p->pool.tag[1];
  if (rc == 0) rc = epoll_ctl(w->ep, EPOLL_CTL_ADD, p->fd[1], &ev);
  struct epoll_event cev = { .events = EPOLLIN, .data.ptr = &p->pool.tag[2] };
  if (rc == 0) rc = epoll_ctl(w->ep, EPOLL_CTL_ADD, p->efd, &cev);
  if (rc != 0) { p->reason = R_ERROR; p->err = errno; p->side = -1; finish(w, p); return; }
  runq_push(w, p);
}

static void on_event(relay_worker *w, struct epoll_event *e) {
  if (e->data.ptr == NULL) {
    uint64_t n;
    ssize_t r = read(w->wake, &n, sizeof n);
    (void)r;
    pthread_mutex_lock(&w->mu);
    splice_io_t *list = w->incoming;
    w->incoming = NULL;
    pthread_mutex_unlock(&w->mu);
    while (list) { splice_io_t *next = list->pool.next; adopt(w, list); list = next; }
    return;
  }
  struct relay_tag *tag = e->data.ptr;
  splice_io_t *p = tag->p;
  if (p->pool.done) return;
  uint32_t ev = e->events;
  if (tag->which == 2) p->pool.cancelled = 1; /* the cancel wins over everything else, as in mm_wait */
  else {
    int i = tag->which;
    /* HUP/RDHUP/ERR: a read returns 0 or the error now, and a write fails: let the syscalls say which */
    if (ev & (EPOLLIN | EPOLLHUP | EPOLLRDHUP | EPOLLERR)) p->rd_ready[i] = 1;
    if (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR)) p->wr_ready[i] = 1;
    if (ev & EPOLLERR) p->err_seen[i] = 1;
  }
  runq_push(w, p);
}

/* run every tunnel queued when this round began once; those still moving go to the back of the queue */
static void run_queue(relay_worker *w) {
  splice_io_t *p = w->runq;
  w->runq = w->runq_tail = NULL;
  while (p) {
    splice_io_t *next = p->pool.next;
    p->pool.queued = 0;
    int r = run(p);
    if (r == RUN_END) finish(w, p);
    else if (r == RUN_AGAIN) runq_push(w, p);
    else if (heap_set(w, p, deadline(p)) != 0) { p->reason = R_ERROR; p->err = ENOMEM; p->side = -1; finish(w, p); }
    p = next;
  }
}

static void *worker_main(void *arg) {
  relay_worker *w = arg;
  pthread_setname_np(pthread_self(), "mm-relay");
  struct epoll_event ev[BATCH];
  for (;;) {
    int timeout = -1;
    if (w->runq) timeout = 0;
    else if (w->heap_n) {
      int64_t left = w->heap[0]->pool.heap_key - mm_now_ms();
      timeout = left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
    }
    int n = epoll_wait(w->ep, ev, BATCH, timeout);
    for (int i = 0; i < n; i++) on_event(w, &ev[i]);
    /* tunnels whose deadline has come: run them (the run says whether it was the idle limit or a budget) */
    int64_t now = mm_now_ms();
    while (w->heap_n && w->heap[0]->pool.heap_key <= now) {
      splice_io_t *p = w->heap[0];
      heap_remove(w, p);
      runq_push(w, p);
    }
    run_queue(w);
  }
  return NULL;
}

static int cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

static void start_workers(void) {
  /* two threads by default (one on a single CPU): in the concurrency bench on a loaded machine
   * (docs/dev/lab/2026-12-03-epoll-relay.md) one loop per gateway was cheaper per GiB in one run, but in the next
   * it got a single thread's share of the CPUs and carried 0.58x what two carried; two matched HAProxy in both */
  int n = want_threads > 0 ? want_threads : cpus() < 2 ? 1 : 2;
  if (n > MAX_WORKERS) n = MAX_WORKERS;
  for (int i = 0; i < n; i++) {
    relay_worker *w = &workers[i];
    w->ep = epoll_create1(EPOLL_CLOEXEC);
    w->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
    if (w->ep < 0 || w->wake < 0 || epoll_ctl(w->ep, EPOLL_CTL_ADD, w->wake, &ev) != 0) { started_err = errno; break; }
    pthread_mutex_init(&w->mu, NULL);
    int rc = mm_spawn_detached(worker_main, w, 256);
    if (rc != 0) { started_err = rc; break; }
    nworkers = i + 1;
  }
  if (nworkers > 0) started_err = 0;
}

int relay_pool_submit(splice_io_t *p, void (*on_end)(splice_io_t *p, void *arg), void *arg) {
  pthread_once(&once, start_workers);
  if (nworkers == 0) return started_err ? started_err : EAGAIN;
  relay_worker *w = &workers[0];
  for (int i = 1; i < nworkers; i++)
    if (__atomic_load_n(&workers[i].tunnels, __ATOMIC_RELAXED) < __atomic_load_n(&w->tunnels, __ATOMIC_RELAXED)) w = &workers[i];
  __atomic_add_fetch(&w->tunnels, 1, __ATOMIC_RELAXED);
  p->pool.w = w;
  p->pool.on_end = on_end;
  p->pool.arg = arg;
  p->pool.queued = p->pool.cancelled = p->pool.done = 0;
  p->pool.heap_idx = -1;
  pthread_mutex_lock(&w->mu);
  p->pool.next = w->incoming;
  w->incoming = p;
  pthread_mutex_unlock(&w->mu);
  uint64_t one = 1;
  ssize_t r = write(w->wake, &one, sizeof one);
  (void)r;
  return 0;
}

int relay_pool_enabled(void) { return __atomic_load_n(&pool_on, __ATOMIC_RELAXED); }

int relay_pool_configure(int enabled, int threads) {
  __atomic_store_n(&pool_on, enabled ? 1 : 0, __ATOMIC_RELAXED);
  if (threads <= 0) return 0;
  if (nworkers > 0) return threads == nworkers ? 0 : -1;
  want_threads = threads;
  return 0;
}

int relay_pool_threads(void) { return nworkers; }
