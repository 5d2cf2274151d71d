/*
 * The splice(2) relay loop shared by the plaintext pump (mmproxy.c: startPump) and the authenticated-splice
 * tunnel (tlsrelay.c: after the mutual-TLS handshake, the tunnel header and the binding exchange). Bytes move
 * socket -> pipe -> socket in the kernel; the pipe (1 MiB per direction) is the only buffer.
 */
#define _GNU_SOURCE
#include "splice.h"
#include "ioready.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PIPE_SZ SPLICE_PIPE_SZ

/* side: index of the socket that failed */
static void splice_fail(splice_io_t *p, int side, int err) {
  p->reason = mm_is_reset_errno(err) ? R_RESET : R_ERROR;
  p->side = side;
  p->err = err;
  mm_arm_reset(p->fd[1 - side]);
}

int splice_io_pipes(splice_io_t *p) {
  p->pipefd[0][0] = p->pipefd[0][1] = p->pipefd[1][0] = p->pipefd[1][1] = -1;
  for (int d = 0; d < 2; d++) {
    if (pipe2(p->pipefd[d], O_NONBLOCK | O_CLOEXEC) != 0) {
      int e = errno;
      splice_io_close_pipes(p);
      return e;
    }
    fcntl(p->pipefd[d][0], F_SETPIPE_SZ, PIPE_SZ); /* best effort: falls back to the default 64 KiB */
  }
  return 0;
}

void splice_io_close_pipes(splice_io_t *p) {
  for (int d = 0; d < 2; d++)
    for (int k = 0; k < 2; k++)
      if (p->pipefd[d][k] >= 0) { close(p->pipefd[d][k]); p->pipefd[d][k] = -1; }
}

/* After socket `side` failed, the salvage rule of ioready.h (while the receiver takes the bytes, bounded): what it had already sent
 * (JavaScript's prefix, its pipe, its receive queue) goes on to the other socket, then the kernel is let send it
 * before the reset. Without the first step, data and RST arriving in one poll wake-up were dropped
 * (proxy/src/test/security-resets.test.ts, "bytes before a reset"); without the second, what a budget had held
 * and the salvage moved on at once was discarded by the reset while still queued
 * (proxy/src/test/security-resets-answers.test.ts, "an answer a budget held"). The budget is not asked: this is
 * the last of the stream, bounded in time. Non-blocking: the caller waits for the other socket to be writable
 * (moving) or 1 ms (draining: splice_salvage_wake) and calls again (a poll in splice_run, relaypool.c's epoll
 * edges and timers). */
static void salvage_start(splice_io_t *p, int side, int err) {
  p->salvaging = 1;
  p->salv_draining = 0;
  p->salv_side = side;
  p->salv_err = err;
  p->salv_src_open = 1;
  mm_salvage_begin(&p->salv);
}

/* the salvage's first step: 1 while the other socket is full (wait for it to be writable), 0 when everything is
 * moved (or the deadline passed), -1 when the other socket failed too */
static int salvage_move(splice_io_t *p) {
  int d = p->salv_side, dst = p->fd[1 - d];
  for (;;) {
    ssize_t n;
    if (p->prefix_off[d] < p->prefix_len[d]) {
      n = write(dst, p->prefix[d] + p->prefix_off[d], p->prefix_len[d] - p->prefix_off[d]);
      if (n > 0) { p->prefix_off[d] += (size_t)n; __atomic_add_fetch(&p->bytes[d], (uint64_t)n, __ATOMIC_RELAXED); mm_salvage_moved(&p->salv); continue; }
    } else {
      if (p->salv_src_open && p->inpipe[d] < PIPE_SZ) {
        n = splice(p->fd[d], NULL, p->pipefd[d][1], NULL, PIPE_SZ - p->inpipe[d], SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) p->inpipe[d] += (size_t)n;
        else if (!(n < 0 && errno == EINTR)) p->salv_src_open = 0; /* 0, the reset, or EAGAIN: nothing more to read */
      }
      if (p->inpipe[d] == 0) { if (!p->salv_src_open) return 0; continue; }
      n = splice(p->pipefd[d][0], NULL, dst, NULL, p->inpipe[d], SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) { p->inpipe[d] -= (size_t)n; __atomic_add_fetch(&p->bytes[d], (uint64_t)n, __ATOMIC_RELAXED); mm_salvage_moved(&p->salv); continue; }
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return -1; /* the other side cannot take it either */
    if (mm_now_ms() >= mm_salvage_deadline(&p->salv)) return 0;
    p->wr_ready[1 - d] = 0;
    return 1;
  }
}

int splice_salvage_step(splice_io_t *p) {
  int dst = p->fd[1 - p->salv_side];
  if (!p->salv_draining) {
    int r = salvage_move(p);
    if (r > 0) return 1;
    p->salv_draining = r == 0; /* a failed socket sends nothing more: no wait */
  }
  if (p->salv_draining && mm_salvage_unsent(&p->salv, dst) > 0 && mm_now_ms() < mm_salvage_deadline(&p->salv)) return 1;
  p->salvaging = p->salv_draining = 0;
  splice_fail(p, p->salv_side, p->salv_err);
  return 0;
}

int64_t splice_salvage_wake(const splice_io_t *p) {
  int64_t deadline = mm_salvage_deadline(&p->salv);
  if (!p->salv_draining) return deadline;
  int64_t next = mm_now_ms() + 1;
  return next < deadline ? next : deadline;
}

void splice_sockerr(splice_io_t *p, int side) {
  int se = 0;
  socklen_t sl = sizeof se;
  getsockopt(p->fd[side], SOL_SOCKET, SO_ERROR, &se, &sl);
  salvage_start(p, side, se ? se : ECONNRESET);
}

/* the smallest grant a budgeted direction writes (less while the budget is small: see mm_budget_take_least) */
#define BUDGET_LEAST 32768
/* How many of the pipe's bytes direction d may write now: all without a budget; else what the budget grants,
 * 0 while it holds the direction (held_until[d], ns, set from the budget's wait and cleared once it passes). */
static size_t budget_grant(splice_io_t *p, int d) {
  if (!p->budget[d]) return p->inpipe[d];
  int64_t now = mm_budget_now_ns(), wait = 0;
  if (p->held_until[d] && now < p->held_until[d]) return 0;
  p->held_until[d] = 0;
  size_t g = (size_t)mm_budget_take_least(p->budget[d], &p->buser[d], p->inpipe[d], BUDGET_LEAST, now, &wait);
  if (g == 0) p->held_until[d] = now + wait;
  return g;
}

void splice_begin(splice_io_t *p) {
  for (int d = 0; d < 2; d++) {
    p->rd_eof[d] = p->wr_done[d] = p->in_full[d] = p->err_seen[d] = 0;
    p->rd_ready[d] = p->wr_ready[d] = 1;
    p->held_until[d] = 0;
    if (p->budget[d]) mm_budget_join(p->budget[d], &p->buser[d], mm_budget_now_ns());
  }
  p->salvaging = p->salv_draining = 0;
  p->last_ms = mm_now_ms();
  p->reason = -1;
}

#define STOPPED(p) ((p)->reason >= 0 || (p)->salvaging)

/* direction d, step 1: bytes JavaScript had already read before handing over go out first; 1 when done. A failed
 * write is socket 1-d failing, as in pass_splice, and takes the same salvage: a destination that answered and
 * reset before its prefix was written is found here, and its answer still goes to the other end */
static int pass_prefix(splice_io_t *p, int d, int *progress) {
  int dst = p->fd[1 - d];
  while (p->prefix_off[d] < p->prefix_len[d] && p->wr_ready[1 - d]) {
    ssize_t n = write(dst, p->prefix[d] + p->prefix_off[d], p->prefix_len[d] - p->prefix_off[d]);
    if (n > 0) {
      p->prefix_off[d] += (size_t)n;
      __atomic_add_fetch(&p->bytes[d], (uint64_t)n, __ATOMIC_RELAXED);
      *progress = 1;
    } else if (n < 0 && errno == EAGAIN) {
      p->wr_ready[1 - d] = 0;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      salvage_start(p, 1 - d, errno);
      return 0;
    }
  }
  return p->prefix_off[d] >= p->prefix_len[d];
}

/* direction d, steps 2-4: socket -> pipe, pipe -> socket (as the budget allows), half-close */
static void pass_splice(splice_io_t *p, int d, int *progress) {
  int src = p->fd[d], dst = p->fd[1 - d];
  if (!p->rd_eof[d] && p->rd_ready[d] && !p->in_full[d] && p->inpipe[d] < PIPE_SZ) {
    ssize_t n = splice(src, NULL, p->pipefd[d][1], NULL, PIPE_SZ - p->inpipe[d], SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n > 0) {
      p->inpipe[d] += (size_t)n;
      *progress = 1;
    } else if (n == 0) {
      p->rd_eof[d] = 1;
      *progress = 1;
    } else if (errno == EAGAIN) {
      /* either the socket is empty or the pipe is full (it counts pages, not bytes) */
      if (p->inpipe[d] > 0) p->in_full[d] = 1; else p->rd_ready[d] = 0;
    } else if (errno != EINTR) {
      salvage_start(p, d, errno);
      return;
    }
  }
  size_t len = p->inpipe[d] > 0 && p->wr_ready[1 - d] ? budget_grant(p, d) : 0;
  if (len > 0) {
    ssize_t n = splice(p->pipefd[d][0], NULL, dst, NULL, len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (p->budget[d] && (size_t)(n > 0 ? n : 0) < len) mm_budget_refund(p->budget[d], &p->buser[d], len - (size_t)(n > 0 ? n : 0));
    if (n > 0) {
      p->inpipe[d] -= (size_t)n;
      __atomic_add_fetch(&p->bytes[d], (uint64_t)n, __ATOMIC_RELAXED);
      p->in_full[d] = 0;
      *progress = 1;
    } else if (n < 0 && errno == EAGAIN) {
      p->wr_ready[1 - d] = 0;
    } else if (n < 0 && errno != EINTR) {
      salvage_start(p, 1 - d, errno);
      return;
    }
  }
  /* half-close: everything read from src has been written to dst */
  if (p->rd_eof[d] && p->inpipe[d] == 0 && !p->wr_done[d]) {
    shutdown(dst, SHUT_WR);
    p->wr_done[d] = 1;
    *progress = 1;
  }
}

int splice_pass(splice_io_t *p) {
  int progress = 0;
  for (int d = 0; d < 2 && !STOPPED(p); d++)
    if (pass_prefix(p, d, &progress) && !STOPPED(p)) pass_splice(p, d, &progress);
  if (!STOPPED(p) && p->wr_done[0] && p->wr_done[1]) p->reason = R_EOF;
  return progress;
}

void splice_end(splice_io_t *p) {
  for (int d = 0; d < 2; d++) if (p->budget[d]) mm_budget_leave(p->budget[d], &p->buser[d], mm_budget_now_ns());
  splice_io_close_pipes(p);
  /* a forced end (idle, cancel, error) is a reset on both sides: a cut stream must never look complete */
  if (p->reason != R_EOF) { mm_arm_reset(p->fd[0]); mm_arm_reset(p->fd[1]); }
}

/* the salvage in the relay's own thread: poll the other socket until it is done or its deadline passes */
static void salvage_blocking(splice_io_t *p) {
  while (splice_salvage_step(p)) {
    if (p->salv_draining) { mm_wait_sent(p->fd[1 - p->salv_side], &p->salv); continue; }
    int64_t left = mm_salvage_deadline(&p->salv) - mm_now_ms();
    struct pollfd q = { .fd = p->fd[1 - p->salv_side], .events = POLLOUT, .revents = 0 };
    if (left > 0 && poll(&q, 1, (int)left) < 0 && errno != EINTR) mm_salvage_end(&p->salv); /* poll failed */
    if (q.revents) p->wr_ready[1 - p->salv_side] = 1;
  }
}

/* one poll for splice_run: what each socket is waited for, given the state; the wait's end as MM_* */
static int wait_once(splice_io_t *p, int hup_ignored[2], struct pollfd pfd[2], int *idx, int *err) {
  for (int i = 0; i < 2; i++) {
    short ev = 0;
    /* as the source of direction i */
    if (!p->rd_eof[i] && !p->in_full[i] && !p->rd_ready[i]) ev |= POLLIN;
    /* as the destination of direction 1-i */
    int o = 1 - i;
    if ((p->inpipe[o] > 0 || p->prefix_off[o] < p->prefix_len[o]) && !p->wr_ready[i] && !p->held_until[o]) ev |= POLLOUT;
    pfd[i].fd = (ev == 0 && hup_ignored[i]) ? -1 : p->fd[i];
    pfd[i].events = ev;
    pfd[i].revents = 0;
  }
  int64_t idle_at = p->idle_ms > 0 ? p->last_ms + p->idle_ms : -1, until = idle_at;
  for (int d = 0; d < 2; d++) {
    int64_t h = p->held_until[d] ? (p->held_until[d] + 999999) / 1000000 : -1; /* ms, rounded up */
    if (h >= 0 && (until < 0 || h < until)) until = h;
  }
  int w = mm_wait(pfd, p->efd, until, idx, err);
  if (w == MM_TIMEOUT && (idle_at < 0 || mm_now_ms() < idle_at)) return MM_READY; /* a budget's wait ended */
  return w;
}

/* Relay until both directions have finished (EOF propagated as SHUT_WR), a socket fails, the idle time passes
 * or the eventfd is signalled. Pipes are closed on return. A forced end arms SO_LINGER {1, 0} on both sockets. */
void splice_run(splice_io_t *p) {
  int hup_ignored[2] = {0, 0};
  splice_begin(p);
  while (p->reason < 0) {
    int progress = splice_pass(p);
    if (p->salvaging) { salvage_blocking(p); break; }
    if (p->reason >= 0) break;
    if (progress) { p->last_ms = mm_now_ms(); continue; }
    struct pollfd pfd[2];
    int idx = 0, err = 0, w = wait_once(p, hup_ignored, pfd, &idx, &err);
    if (w == MM_TIMEOUT) p->reason = R_IDLE;
    else if (w == MM_CANCEL) p->reason = R_CANCEL;
    else if (w == MM_POLLFAIL) { p->reason = R_ERROR; p->err = err; p->side = -1; }
    else if (w == MM_SOCKERR) { salvage_start(p, idx, err); salvage_blocking(p); }
    else for (int i = 0; i < 2; i++) {
      short re = pfd[i].revents;
      /* POLLHUP/RDHUP: a read returns 0 (or an error) now, and a write fails: let the syscalls say which */
      if (re & (POLLIN | POLLHUP)) p->rd_ready[i] = 1;
      if (re & (POLLOUT | POLLHUP)) p->wr_ready[i] = 1;
      /* POLLHUP with nothing wanted from this socket: stop polling it (it cannot wake us again) */
      if ((re & POLLHUP) && pfd[i].events == 0) hup_ignored[i] = 1;
    }
  }
  splice_end(p);
}
