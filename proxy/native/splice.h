/* The kernel splice(2) relay between two connected, non-blocking TCP sockets (splice.c). */
#ifndef MM_SPLICE_H
#define MM_SPLICE_H
#include "budget.h"
#include "ioready.h"
#include <stddef.h>
#include <stdint.h>

enum { R_EOF = 0, R_RESET, R_IDLE, R_CANCEL, R_ERROR };

typedef struct splice_io {
  int fd[2];
  int pipefd[2][2]; /* [direction][0 = read end, 1 = write end]; direction 0 is fd[0] -> fd[1] */
  size_t inpipe[2];
  unsigned char *prefix[2]; /* bytes to write before anything spliced (owned by the caller) */
  size_t prefix_len[2], prefix_off[2];
  int efd;          /* eventfd: readable = cancel */
  int idle_ms;      /* 0 = no idle limit */
  uint64_t *bytes;  /* [2], bytes delivered per direction, updated with __atomic builtins */
  int reason, side, err; /* R_*, index of the failed socket (-1 none), errno */
  mm_budget *budget[2];  /* per direction: the peer's bandwidth budget the bytes written count against (NULL: none);
                            splice_run joins it at start and leaves it on return (issue 52 item 3) */
  mm_budget_user buser[2];
  /* the relay's state (splice_begin sets it; the thread loop and the event pool both drive it) */
  int rd_eof[2], wr_done[2], in_full[2];
  int rd_ready[2], wr_ready[2]; /* readiness as last reported (or assumed): only try a syscall that can succeed */
  int err_seen[2];              /* relaypool.c: EPOLLERR reported on fd[i], not yet acted on */
  int64_t last_ms;              /* last progress (the idle limit counts from here) */
  int64_t held_until[2];        /* ns: a budgeted direction refused until then (0: not held) */
  int salvaging, salv_side, salv_err, salv_src_open; /* after fd[salv_side] failed: see splice_salvage_step */
  int salv_draining;            /* the salvage has moved what it could: waiting for the kernel to send it */
  mm_salvage_t salv;             /* the salvage's clock (ioready.h) */
  struct relay_link {           /* relaypool.c's bookkeeping (unused by splice_run) */
    struct relay_worker *w;
    struct splice_io *next;     /* run queue / submission queue */
    int queued, heap_idx, cancelled, done;
    int64_t heap_key;           /* ms */
    void (*on_end)(struct splice_io *p, void *arg);
    void *arg;
    struct relay_tag { struct splice_io *p; int which; } tag[3]; /* epoll data: fd[0], fd[1], efd */
  } pool;
} splice_io_t;

/* create the two pipes (1 MiB when the kernel allows): 0 or an errno */
int splice_io_pipes(splice_io_t *p);
void splice_io_close_pipes(splice_io_t *p);
/* relay until done in the calling thread (poll); closes the pipes; a forced end arms SO_LINGER {1, 0} on both
 * sockets (close = RST). The thread-per-tunnel relay: the default is the event pool (relaypool.h). */
void splice_run(splice_io_t *p);

/* The steps both relays are made of. splice_begin: join the budgets, reset the state (every socket assumed ready).
 * splice_pass: one round over both directions with the syscalls the readiness flags allow; returns whether bytes
 * or an EOF moved. A socket failure starts the salvage (p->salvaging) or ends the relay (p->reason >= 0).
 * splice_salvage_step: moves what the failed side had sent toward the other, then waits for the kernel to send
 * it (ioready.h's salvage rule), non-blocking; 1 while it waits (before the salvage clock's deadline), 0 when done (p->reason then
 * set: a reset or error). splice_salvage_wake: when to call it again at the latest (ms): the deadline while it
 * waits for the other socket to be writable, 1 ms from now while it waits for the kernel to send.
 * splice_sockerr: a socket reported an error (POLLERR/EPOLLERR) with nothing else to do: starts the salvage.
 * splice_end: leave the budgets, close the pipes, arm the resets of a forced end. */
void splice_begin(splice_io_t *p);
int splice_pass(splice_io_t *p);
int splice_salvage_step(splice_io_t *p);
int64_t splice_salvage_wake(const splice_io_t *p);
void splice_sockerr(splice_io_t *p, int side);
void splice_end(splice_io_t *p);
#define SPLICE_PIPE_SZ (1 << 20)

#endif
