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
/* The salvage rule of every relay (splice.c, tls13relay.c, tlsopenssl.c): after a socket failed, what it had sent
 * goes on to the other socket, as a direct connection would have delivered it (a reset ends a stream, it does not
 * unsend it), and the kernel is let send it (mm_unsent reaches 0) before the relay's own reset: a close with
 * SO_LINGER {1, 0} discards what is queued and not sent. The salvage goes on while the receiving end takes the
 * bytes: it ends MM_SALVAGE_IDLE_MS after its last progress (a byte moved on, or fewer bytes unsent than at the
 * last look), and MM_SALVAGE_MAX_MS after it began at the latest. A fixed window instead (200 ms in all, until
 * 2026-12-03) cut answers whose receiver was reading, only slowly: a loaded machine
 * (proxy/src/test/security-resets-answers.test.ts, "an answer a budget held", failed 3 of 4 variants at load 25-30). */
#define MM_SALVAGE_IDLE_MS 1000 /* 200 lost an answer at load 47: the receiving process had not read for that long */
#define MM_SALVAGE_MAX_MS 5000
/* One salvage's clock (mm_salvage_begin, then mm_salvage_moved on each move): its deadline is
 * mm_salvage_deadline. `unsent` is the last mm_salvage_unsent reading (-1: none yet). */
typedef struct { int64_t start, last; int unsent; } mm_salvage_t;
void mm_salvage_begin(mm_salvage_t *s);
void mm_salvage_moved(mm_salvage_t *s);
int64_t mm_salvage_deadline(const mm_salvage_t *s);
/* ends the salvage now (its deadline passed) */
void mm_salvage_end(mm_salvage_t *s);
/* mm_unsent(fd), counted as progress when it is less than at the last look */
int mm_salvage_unsent(mm_salvage_t *s, int fd);
/* bytes queued on socket `fd` that the kernel has not sent yet (SIOCOUTQNSD); 0 when it cannot say */
int mm_unsent(int fd);
/* Wait (1 ms naps) until mm_unsent(fd) is 0 or the salvage's deadline passes (it moves while the kernel sends):
 * the blocking relays' last salvage step (relaypool.c, which must not block, checks from its timer instead). */
void mm_wait_sent(int fd, mm_salvage_t *s);
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
