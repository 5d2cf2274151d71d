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

#define PIPE_SZ (1 << 20)

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

/* After socket `side` failed: what it had already sent (JavaScript's prefix, its pipe, its receive queue) goes on to
 * the other socket before the reset, as a direct connection would have delivered it (a reset ends the stream, it
 * does not unsend it), for at most SALVAGE_MS. Without this, data and RST arriving in one poll wake-up were
 * dropped (proxy/src/test/security-resets.test.ts, "bytes before a reset"). The budget is not asked: this is the
 * last of the stream, bounded in time. */
#define SALVAGE_MS 200
static void splice_salvage(splice_io_t *p, int side) {
  int d = side, dst = p->fd[1 - side];
  int64_t deadline = mm_now_ms() + SALVAGE_MS;
  for (int src_open = 1;;) {
    ssize_t n;
    if (p->prefix_off[d] < p->prefix_len[d]) {
      n = write(dst, p->prefix[d] + p->prefix_off[d], p->prefix_len[d] - p->prefix_off[d]);
      if (n > 0) { p->prefix_off[d] += (size_t)n; __atomic_add_fetch(&p->bytes[d], (uint64_t)n, __ATOMIC_RELAXED); continue; }
    } else {
      if (src_open && p->inpipe[d] < PIPE_SZ) {
        n = splice(p->fd[d], NULL, p->pipefd[d][1], NULL, PIPE_SZ - p->inpipe[d], SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) p->inpipe[d] += (size_t)n;
        else if (!(n < 0 && errno == EINTR)) src_open = 0; /* 0, the reset, or EAGAIN: nothing more to read */
      }
      if (p->inpipe[d] == 0) { if (!src_open) return; continue; }
      n = splice(p->pipefd[d][0], NULL, dst, NULL, p->inpipe[d], SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) { p->inpipe[d] -= (size_t)n; __atomic_add_fetch(&p->bytes[d], (uint64_t)n, __ATOMIC_RELAXED); continue; }
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return; /* the other side cannot take it either */
    int64_t left = deadline - mm_now_ms();
    if (left <= 0) return;
    struct pollfd q = { .fd = dst, .events = POLLOUT, .revents = 0 };
    if (poll(&q, 1, (int)left) < 0 && errno != EINTR) return;
  }
}

/* How many of the pipe's bytes direction d may write now: all without a budget; else what the budget grants,
 * 0 while it holds the direction (held_until[d], ns, set from the budget's wait and cleared once it passes). */
static size_t budget_grant(splice_io_t *p, int d, int64_t held_until[2]) {
  if (!p->budget[d]) return p->inpipe[d];
  int64_t now = mm_budget_now_ns(), wait = 0;
  if (held_until[d] && now < held_until[d]) return 0;
  held_until[d] = 0;
  size_t g = (size_t)mm_budget_take(p->budget[d], &p->buser[d], p->inpipe[d], now, &wait);
  if (g == 0) held_until[d] = now + wait;
  return g;
}

/* Relay until both directions have finished (EOF propagated as SHUT_WR), a socket fails, the idle time passes
 * or the eventfd is signalled. Pipes are closed on return. A forced end arms SO_LINGER {1, 0} on both sockets. */
void splice_run(splice_io_t *p) {
  int rd_eof[2] = {0, 0}, wr_done[2] = {0, 0}, in_full[2] = {0, 0}, hup_ignored[2] = {0, 0};
  /* readiness as last reported by poll (or assumed at start), per socket: only try a syscall that can
   * succeed, so a one-way bulk transfer costs two splices per chunk and no EAGAIN probes */
  int rd_ready[2] = {1, 1}, wr_ready[2] = {1, 1};
  int64_t last = mm_now_ms();
  int64_t held_until[2] = {0, 0}; /* ns: a budgeted direction refused until then */
  for (int d = 0; d < 2; d++) if (p->budget[d]) mm_budget_join(p->budget[d], &p->buser[d], mm_budget_now_ns());
  p->reason = -1;
  for (;;) {
    int progress = 0;
    for (int d = 0; d < 2 && p->reason < 0; d++) {
      int src = p->fd[d], dst = p->fd[1 - d];
      /* 1. bytes JavaScript had already read before handing over go out first */
      while (p->prefix_off[d] < p->prefix_len[d] && wr_ready[1 - d]) {
        ssize_t n = write(dst, p->prefix[d] + p->prefix_off[d], p->prefix_len[d] - p->prefix_off[d]);
        if (n > 0) {
          p->prefix_off[d] += (size_t)n;
          __atomic_add_fetch(&p->bytes[d], (uint64_t)n, __ATOMIC_RELAXED);
          progress = 1;
        } else if (n < 0 && errno == EAGAIN) {
          wr_ready[1 - d] = 0;
        } else if (n < 0 && errno == EINTR) {
          continue;
        } else {
          splice_fail(p, 1 - d, errno);
          break;
        }
      }
      if (p->reason >= 0 || p->prefix_off[d] < p->prefix_len[d]) continue;
      /* 2. socket -> pipe */
      if (!rd_eof[d] && rd_ready[d] && !in_full[d] && p->inpipe[d] < PIPE_SZ) {
        ssize_t n = splice(src, NULL, p->pipefd[d][1], NULL, PIPE_SZ - p->inpipe[d], SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
          p->inpipe[d] += (size_t)n;
          progress = 1;
        } else if (n == 0) {
          rd_eof[d] = 1;
          progress = 1;
        } else if (errno == EAGAIN) {
          /* either the socket is empty or the pipe is full (it counts pages, not bytes) */
          if (p->inpipe[d] > 0) in_full[d] = 1; else rd_ready[d] = 0;
        } else if (errno != EINTR) {
          int e = errno;
          splice_salvage(p, d);
          splice_fail(p, d, e);
          continue;
        }
      }
      /* 3. pipe -> socket */
      size_t len = p->inpipe[d] > 0 && wr_ready[1 - d] ? budget_grant(p, d, held_until) : 0;
      if (len > 0) {
        ssize_t n = splice(p->pipefd[d][0], NULL, dst, NULL, len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (p->budget[d] && (size_t)(n > 0 ? n : 0) < len) mm_budget_refund(p->budget[d], &p->buser[d], len - (size_t)(n > 0 ? n : 0));
        if (n > 0) {
          p->inpipe[d] -= (size_t)n;
          __atomic_add_fetch(&p->bytes[d], (uint64_t)n, __ATOMIC_RELAXED);
          in_full[d] = 0;
          progress = 1;
        } else if (n < 0 && errno == EAGAIN) {
          wr_ready[1 - d] = 0;
        } else if (n < 0 && errno != EINTR) {
          int e = errno;
          splice_salvage(p, 1 - d);
          splice_fail(p, 1 - d, e);
          continue;
        }
      }
      /* 4. half-close: everything read from src has been written to dst */
      if (rd_eof[d] && p->inpipe[d] == 0 && !wr_done[d]) {
        shutdown(dst, SHUT_WR);
        wr_done[d] = 1;
        progress = 1;
      }
    }
    if (p->reason >= 0) break;
    if (wr_done[0] && wr_done[1]) { p->reason = R_EOF; break; }
    int64_t t = mm_now_ms();
    if (progress) { last = t; continue; }

    struct pollfd pfd[2];
    for (int i = 0; i < 2; i++) {
      short ev = 0;
      /* as the source of direction i */
      if (!rd_eof[i] && !in_full[i] && !rd_ready[i]) ev |= POLLIN;
      /* as the destination of direction 1-i */
      int o = 1 - i;
      if ((p->inpipe[o] > 0 || p->prefix_off[o] < p->prefix_len[o]) && !wr_ready[i] && !held_until[o]) ev |= POLLOUT;
      pfd[i].fd = (ev == 0 && hup_ignored[i]) ? -1 : p->fd[i];
      pfd[i].events = ev;
      pfd[i].revents = 0;
    }
    int64_t idle_at = p->idle_ms > 0 ? last + p->idle_ms : -1, until = idle_at;
    for (int d = 0; d < 2; d++) {
      int64_t h = held_until[d] ? (held_until[d] + 999999) / 1000000 : -1; /* ms, rounded up */
      if (h >= 0 && (until < 0 || h < until)) until = h;
    }
    int idx = 0, err = 0, w = mm_wait(pfd, p->efd, until, &idx, &err);
    if (w == MM_TIMEOUT && (idle_at < 0 || mm_now_ms() < idle_at)) continue; /* a budget's wait ended, not the idle time */
    if (w == MM_TIMEOUT) { p->reason = R_IDLE; break; }
    if (w == MM_CANCEL) { p->reason = R_CANCEL; break; }
    if (w == MM_POLLFAIL) { p->reason = R_ERROR; p->err = err; p->side = -1; break; }
    if (w == MM_SOCKERR) { splice_salvage(p, idx); splice_fail(p, idx, err); break; }
    for (int i = 0; i < 2; i++) {
      short re = pfd[i].revents;
      /* POLLHUP/RDHUP: a read returns 0 (or an error) now, and a write fails: let the syscalls say which */
      if (re & (POLLIN | POLLHUP)) rd_ready[i] = 1;
      if (re & (POLLOUT | POLLHUP)) wr_ready[i] = 1;
      /* POLLHUP with nothing wanted from this socket: stop polling it (it cannot wake us again) */
      if ((re & POLLHUP) && pfd[i].events == 0) hup_ignored[i] = 1;
    }
    if (p->reason >= 0) break;
  }
  for (int d = 0; d < 2; d++) if (p->budget[d]) mm_budget_leave(p->budget[d], &p->buser[d], mm_budget_now_ns());
  splice_io_close_pipes(p);
  /* a forced end (idle, cancel, error) is a reset on both sides: a cut stream must never look complete */
  if (p->reason != R_EOF) { mm_arm_reset(p->fd[0]); mm_arm_reset(p->fd[1]); }
}
