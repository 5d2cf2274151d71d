/* Shared I/O helpers of the addon's relay loops (see ioready.h). */
#define _GNU_SOURCE
#include "ioready.h"
#include <errno.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <time.h>

int64_t mm_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void mm_arm_reset(int fd) {
  if (fd < 0) return;
  struct linger l = {1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
}

int mm_is_reset_errno(int e) {
  return e == ECONNRESET || e == EPIPE || e == ETIMEDOUT || e == ECONNABORTED || e == EHOSTUNREACH ||
         e == ENETUNREACH || e == ENOTCONN;
}

int mm_wait(struct pollfd p[2], int efd, int64_t until, int *idx, int *err) {
  for (;;) {
    int timeout = -1;
    if (until >= 0) {
      int64_t left = until - mm_now_ms();
      if (left <= 0) return MM_TIMEOUT;
      timeout = (int)(left > 1000000 ? 1000000 : left);
    }
    struct pollfd q[3] = {p[0], p[1], {efd, POLLIN, 0}};
    int n = poll(q, 3, timeout);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) { *err = errno; return MM_POLLFAIL; }
    if (q[2].revents) return MM_CANCEL;
    p[0].revents = q[0].revents;
    p[1].revents = q[1].revents;
    for (int i = 0; i < 2; i++) {
      if (!(q[i].revents & POLLERR)) continue;
      int se = 0;
      socklen_t sl = sizeof se;
      getsockopt(q[i].fd, SOL_SOCKET, SO_ERROR, &se, &sl);
      *idx = i;
      *err = se ? se : ECONNRESET;
      return MM_SOCKERR;
    }
    if (n > 0) return MM_READY;
  }
}

int mm_spawn_detached(void *(*fn)(void *), void *arg, size_t stack_kib) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, stack_kib * 1024);
  pthread_t th;
  int rc = pthread_create(&th, &attr, fn, arg);
  pthread_attr_destroy(&attr);
  return rc;
}

int mm_unsent(int fd) {
  int unsent = 0;
  if (fd < 0 || ioctl(fd, SIOCOUTQNSD, &unsent) != 0 || unsent < 0) return 0;
  return unsent;
}

void mm_salvage_begin(mm_salvage_t *s) { s->start = s->last = mm_now_ms(); s->unsent = -1; }

void mm_salvage_moved(mm_salvage_t *s) { s->last = mm_now_ms(); }

void mm_salvage_end(mm_salvage_t *s) { s->start = s->last = mm_now_ms() - MM_SALVAGE_MAX_MS; }

int64_t mm_salvage_deadline(const mm_salvage_t *s) {
  int64_t idle = s->last + MM_SALVAGE_IDLE_MS, max = s->start + MM_SALVAGE_MAX_MS;
  return idle < max ? idle : max;
}

int mm_salvage_unsent(mm_salvage_t *s, int fd) {
  int n = mm_unsent(fd);
  if (s->unsent >= 0 && n < s->unsent) mm_salvage_moved(s);
  s->unsent = n;
  return n;
}

void mm_wait_sent(int fd, mm_salvage_t *s) {
  while (mm_salvage_unsent(s, fd) > 0 && mm_now_ms() < mm_salvage_deadline(s)) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
}

int mm_wait_writable(int fd, int64_t until) {
  int64_t left = until - mm_now_ms();
  struct pollfd q = {fd, POLLOUT, 0};
  return left > 0 && (poll(&q, 1, (int)left) >= 0 || errno == EINTR);
}
