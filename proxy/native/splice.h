/* The kernel splice(2) relay between two connected, non-blocking TCP sockets (splice.c). */
#ifndef MM_SPLICE_H
#define MM_SPLICE_H
#include "budget.h"
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
} splice_io_t;

/* create the two pipes (1 MiB when the kernel allows): 0 or an errno */
int splice_io_pipes(splice_io_t *p);
void splice_io_close_pipes(splice_io_t *p);
/* relay until done; closes the pipes; a forced end arms SO_LINGER {1, 0} on both sockets (close = RST) */
void splice_run(splice_io_t *p);

#endif
