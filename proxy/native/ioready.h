/* Shared I/O helpers of the addon's relay loops (ioready.c): the monotonic clock, the reset-on-close arm, and the
 * ONE readiness wait every loop uses (splice.c, tls13relay.c, tlsopenssl.c, and the handshake's deadline waits). */
#ifndef MM_IOREADY_H
#define MM_IOREADY_H
#include <poll.h>
#include <stddef.h>
#include <stdint.h>

int64_t mm_now_ms(void);
/* SO_LINGER {1, 0}: close() sends RST instead of FIN (fd < 0: nothing) */
void mm_arm_reset(int fd);
/* errnos that mean the peer (or the path to it) went away: a reset, not a local error */
int mm_is_reset_errno(int e);
/* Wait (1 ms naps) until the kernel has transmitted everything queued on socket `fd` (SIOCOUTQNSD: not sent yet) or
 * the monotonic time `until` (ms) passes: a close with SO_LINGER {1, 0} discards what is not sent, so a relay that
 * moved a failed socket's last bytes on calls this before its reset. */
void mm_wait_sent(int fd, int64_t until);
/* Wait until socket `fd` is writable (or has an error or hang-up for the write to report), at most until the
 * monotonic time `until` (ms): 0 when that time has passed or poll failed, else 1 (try the write). */
int mm_wait_writable(int fd, int64_t until);

enum { MM_READY = 0, MM_TIMEOUT, MM_CANCEL, MM_SOCKERR, MM_POLLFAIL };
/* Wait until one of the two sockets p[0], p[1] (fd -1: not polled; events 0: polled for errors and hang-ups
 * only) has events, the cancel eventfd `efd` is readable, or the monotonic time `until` (ms, < 0: never)
 * passes. EINTR is retried. Returns MM_READY (p[i].revents say what), MM_TIMEOUT, MM_CANCEL, MM_SOCKERR (a
 * socket reported POLLERR: *idx is which, *err its SO_ERROR, ECONNRESET when it has none) or MM_POLLFAIL
 * (*err = poll's errno). The cancel eventfd wins over everything else. */
int mm_wait(struct pollfd p[2], int efd, int64_t until, int *idx, int *err);

/* start fn(arg) on a detached pthread with a stack of stack_kib KiB: 0 or pthread_create's error */
int mm_spawn_detached(void *(*fn)(void *), void *arg, size_t stack_kib);

#endif
