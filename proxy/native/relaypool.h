/* The spliced datapath's event pool (relaypool.c): a bounded set of relay threads, each an epoll loop that owns
 * many tunnels (issue 52 item 2). Tunnels run the same steps as the thread-per-tunnel relay (splice.h). */
#ifndef MM_RELAYPOOL_H
#define MM_RELAYPOOL_H
#include "splice.h"

/* Relay `p` (pipes made, sockets connected, efd its cancel eventfd) on one of the pool's threads. When it ends,
 * splice_end has run and the pool no longer watches fd[0], fd[1] or efd: on_end(p, arg) is called on the pool's
 * thread (it may free p). Returns 0, or an errno when the pool cannot run (the caller relays in its own thread). */
int relay_pool_submit(splice_io_t *p, void (*on_end)(splice_io_t *p, void *arg), void *arg);

/* Which relay new tunnels get: 1 = the event pool (the default), 0 = a thread per tunnel (splice_run; kept for the
 * concurrency bench's before/after rows only, not a gateway setting). */
int relay_pool_enabled(void);
/* Bench only (relayMode in mmproxy.c): choose the relay for tunnels started from now on and, before the pool's
 * first tunnel, its thread count (0: the default, min(2, CPUs)). Returns 0, or -1 when threads comes too late. */
int relay_pool_configure(int enabled, int threads);
int relay_pool_threads(void);

#endif
