/*
 * mmproxy: the gateway's small native addon (plain C, Node-API only).
 *
 *   getOriginalDst(fd)            -> {address, port, family} | null
 *       SO_ORIGINAL_DST (IPv4) / IP6T_SO_ORIGINAL_DST (IPv6) of a connection that nat REDIRECT sent to us.
 *       null when the connection was not redirected (no conntrack NAT entry: ENOENT).
 *   startPump(fdA, fdB, prefixAB, prefixBA, idleMs, cb) -> handle
 *       Relays bytes both ways between two connected, non-blocking TCP sockets (splice.c's steps, on the event pool),
 *       with splice(2) through a pipe per direction (the data never enters user space). The pipe is the
 *       only buffer (1 MiB per direction), so backpressure is the kernel's. EOF on one side becomes
 *       shutdown(SHUT_WR) on the other (half-close); an error/reset on one side sets SO_LINGER{1,0} on the
 *       other so that closing it sends a RST. cb({aToB, bToA, reason, side, errno}) runs once on the JS
 *       thread when the relay ends; the sockets are NOT closed here: JavaScript owns and closes them.
 *       budgetAtoB / budgetBtoA (optional, budgetCreate handles): the peer's bandwidth budget the bytes written
 *       in that direction count against (issue 52 item 3).
 *   budgetCreate(bytesPerSecond) -> handle; budgetSent(handle) -> bytes granted so far
 *   pumpStats(handle)  -> [aToB, bToA]   (bytes so far; safe to call at any time)
 *   pumpCancel(handle)                   (ask the relay to stop; cb then reports reason "cancel")
 *   The relay runs on the event pool (relaypool.c: min(2, CPUs) epoll threads, each owning many tunnels), or in a
 *   thread of its own when the pool cannot start or relayMode("thread") chose it (bench only, below).
 *   bindDeviceSocket(host, port, ifname) -> fd
 *       A TCP socket bound to the interface `ifname` (SO_BINDTODEVICE, set before bind: unprivileged since
 *       Linux 5.7) and to host:port, not yet listening: Node's server.listen({fd}) takes it. Only connections
 *       that arrive on `ifname` are accepted. Throws (code ERR_MMPROXY_ERRNO, errno) on failure.
 */
#define _GNU_SOURCE
#include <node_api.h>
#include "relaypool.h"
#include "ioready.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <net/if.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80
#endif
#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST 80
#endif


#define CHECK(call)                                                        \
  do {                                                                     \
    if ((call) != napi_ok) {                                               \
      napi_throw_error(env, NULL, "mmproxy: Node-API call failed: " #call); \
      return NULL;                                                         \
    }                                                                      \
  } while (0)

static napi_value throw_errno(napi_env env, const char *what, int err) {
  char msg[256];
  snprintf(msg, sizeof msg, "%s: %s", what, strerror(err));
  napi_value code, m, e;
  napi_create_string_utf8(env, msg, NAPI_AUTO_LENGTH, &m);
  napi_create_string_utf8(env, "ERR_MMPROXY_ERRNO", NAPI_AUTO_LENGTH, &code);
  napi_create_error(env, code, m, &e);
  napi_value en;
  napi_create_int32(env, err, &en);
  napi_set_named_property(env, e, "errno", en);
  napi_throw(env, e);
  return NULL;
}

/* ---------------------------------------------------------------- getOriginalDst */

static napi_value GetOriginalDst(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int32_t fd = -1;
  if (argc < 1 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0) {
    napi_throw_type_error(env, NULL, "getOriginalDst(fd): fd must be a non-negative integer");
    return NULL;
  }
  struct sockaddr_storage local;
  socklen_t llen = sizeof local;
  if (getsockname(fd, (struct sockaddr *)&local, &llen) != 0) return throw_errno(env, "getsockname", errno);

  char addr[INET6_ADDRSTRLEN] = {0};
  int port = 0, family = 0;
  int v6 = local.ss_family == AF_INET6 &&
           !IN6_IS_ADDR_V4MAPPED(&((struct sockaddr_in6 *)&local)->sin6_addr);
  if (v6) {
    struct sockaddr_in6 dst;
    socklen_t len = sizeof dst;
    memset(&dst, 0, sizeof dst);
    if (getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &dst, &len) != 0) {
      if (errno == ENOENT || errno == ENOPROTOOPT) { napi_value n; napi_get_null(env, &n); return n; }
      return throw_errno(env, "getsockopt(IP6T_SO_ORIGINAL_DST)", errno);
    }
    inet_ntop(AF_INET6, &dst.sin6_addr, addr, sizeof addr);
    port = ntohs(dst.sin6_port);
    family = 6;
  } else {
    struct sockaddr_in dst;
    socklen_t len = sizeof dst;
    memset(&dst, 0, sizeof dst);
    if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &dst, &len) != 0) {
      if (errno == ENOENT || errno == ENOPROTOOPT) { napi_value n; napi_get_null(env, &n); return n; }
      return throw_errno(env, "getsockopt(SO_ORIGINAL_DST)", errno);
    }
    inet_ntop(AF_INET, &dst.sin_addr, addr, sizeof addr);
    port = ntohs(dst.sin_port);
    family = 4;
  }
  napi_value obj, a, p, f;
  CHECK(napi_create_object(env, &obj));
  CHECK(napi_create_string_utf8(env, addr, NAPI_AUTO_LENGTH, &a));
  CHECK(napi_create_int32(env, port, &p));
  CHECK(napi_create_int32(env, family, &f));
  CHECK(napi_set_named_property(env, obj, "address", a));
  CHECK(napi_set_named_property(env, obj, "port", p));
  CHECK(napi_set_named_property(env, obj, "family", f));
  return obj;
}

/* ---------------------------------------------------------------- per-peer bandwidth budget */

/* A budget shared by JavaScript (an external, one per peer) and every relay thread toward that peer: counted
 * references, so a relay still running when the gateway drops the budget keeps it alive until it ends. */
typedef struct budget_ref {
  mm_budget b; /* first: an mm_budget * is a budget_ref_t * */
  int refs;
} budget_ref_t;

void mm_budget_put(mm_budget *b) {
  if (!b) return;
  budget_ref_t *r = (budget_ref_t *)b;
  if (__atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) == 0) { mm_budget_destroy(&r->b); free(r); }
}

static void budget_finalize(napi_env env, void *data, void *hint) { mm_budget_put((mm_budget *)data); }

/* the budget behind a budgetCreate() handle, with a reference for the caller (NULL for undefined/null);
 * -1 in *bad when the value is neither */
mm_budget *mm_budget_from_js(napi_env env, napi_value v, int *bad) {
  napi_valuetype t;
  *bad = 0;
  if (napi_typeof(env, v, &t) != napi_ok || t == napi_undefined || t == napi_null) return NULL;
  void *data = NULL;
  if (t != napi_external || napi_get_value_external(env, v, &data) != napi_ok || !data) { *bad = -1; return NULL; }
  budget_ref_t *r = data;
  __atomic_add_fetch(&r->refs, 1, __ATOMIC_ACQ_REL);
  return &r->b;
}

/* budgetCreate(bytesPerSecond) -> handle: one peer's budget, shared by every relay given it */
static napi_value BudgetCreate(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  double rate = 0;
  if (argc < 1 || napi_get_value_double(env, argv[0], &rate) != napi_ok || !(rate >= 1) || rate > 1e15) {
    napi_throw_type_error(env, NULL, "budgetCreate(bytesPerSecond): a number of bytes per second, at least 1");
    return NULL;
  }
  budget_ref_t *r = calloc(1, sizeof *r);
  if (!r) return throw_errno(env, "calloc", ENOMEM);
  if (mm_budget_init(&r->b, (uint64_t)rate, 0, mm_budget_now_ns()) != 0) { free(r); return throw_errno(env, "budgetCreate", EINVAL); }
  r->refs = 1;
  napi_value ext;
  if (napi_create_external(env, r, budget_finalize, NULL, &ext) != napi_ok) { mm_budget_put(&r->b); napi_throw_error(env, NULL, "budgetCreate: napi_create_external failed"); return NULL; }
  return ext;
}

/* budgetSent(handle) -> bytes granted so far under this budget (for the metrics) */
static napi_value BudgetSent(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], v;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int bad = 0;
  mm_budget *b = argc >= 1 ? mm_budget_from_js(env, argv[0], &bad) : NULL;
  if (!b) { napi_throw_type_error(env, NULL, "budgetSent(handle)"); return NULL; }
  uint64_t sent = mm_budget_sent(b);
  mm_budget_put(b);
  CHECK(napi_create_double(env, (double)sent, &v));
  return v;
}

/* ---------------------------------------------------------------- splice pump */

static const char *reason_names[] = {"eof", "reset", "idle", "cancel", "error"};

typedef struct pump {
  splice_io_t io;
  uint64_t bytes[2]; /* accessed with __atomic builtins */
  napi_threadsafe_function tsfn;
  pthread_mutex_t mu;
  int finished;
  int refs; /* thread (released in call_js) + JS external (released in finalizer) */
} pump_t;

static void pump_unref(pump_t *p) {
  if (__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    for (int d = 0; d < 2; d++) mm_budget_put(p->io.budget[d]);
    pthread_mutex_destroy(&p->mu);
    free(p->io.prefix[0]);
    free(p->io.prefix[1]);
    free(p);
  }
}

/* the relay has ended (splice_end done): report to JavaScript, from the relay's thread or the pool's */
static void pump_ended(pump_t *p) {
  pthread_mutex_lock(&p->mu);
  p->finished = 1;
  close(p->io.efd);
  p->io.efd = -1;
  pthread_mutex_unlock(&p->mu);
  napi_call_threadsafe_function(p->tsfn, p, napi_tsfn_blocking);
  napi_release_threadsafe_function(p->tsfn, napi_tsfn_release);
}

static void *pump_thread(void *arg) {
  pump_t *p = arg;
  splice_run(&p->io);
  pump_ended(p);
  return NULL;
}

static void pump_pool_end(splice_io_t *io, void *arg) { pump_ended(arg); }

static void pump_call_js(napi_env env, napi_value cb, void *context, void *data) {
  pump_t *p = data;
  if (env != NULL && cb != NULL) {
    napi_value res, v, undef;
    napi_create_object(env, &res);
    napi_create_double(env, (double)__atomic_load_n(&p->bytes[0], __ATOMIC_RELAXED), &v);
    napi_set_named_property(env, res, "aToB", v);
    napi_create_double(env, (double)__atomic_load_n(&p->bytes[1], __ATOMIC_RELAXED), &v);
    napi_set_named_property(env, res, "bToA", v);
    napi_create_string_utf8(env, reason_names[p->io.reason], NAPI_AUTO_LENGTH, &v);
    napi_set_named_property(env, res, "reason", v);
    napi_create_string_utf8(env, p->io.side == 0 ? "a" : p->io.side == 1 ? "b" : "", NAPI_AUTO_LENGTH, &v);
    napi_set_named_property(env, res, "side", v);
    napi_create_int32(env, p->io.err, &v);
    napi_set_named_property(env, res, "errno", v);
    napi_get_undefined(env, &undef);
    napi_call_function(env, undef, cb, 1, &res, NULL);
  }
  pump_unref(p);
}

static void pump_finalize(napi_env env, void *data, void *hint) { pump_unref((pump_t *)data); }

static int copy_prefix(napi_env env, napi_value v, unsigned char **out, size_t *len) {
  napi_valuetype t;
  napi_typeof(env, v, &t);
  *out = NULL;
  *len = 0;
  if (t == napi_undefined || t == napi_null) return 0;
  bool is_buf = false;
  napi_is_buffer(env, v, &is_buf);
  if (!is_buf) return -1;
  void *data;
  size_t n;
  if (napi_get_buffer_info(env, v, &data, &n) != napi_ok) return -1;
  if (n == 0) return 0;
  *out = malloc(n);
  if (!*out) return -1;
  memcpy(*out, data, n);
  *len = n;
  return 0;
}

/* a pump not started: free it (refs 1: nothing else holds it) and throw `msg` */
static pump_t *pump_refuse(napi_env env, pump_t *p, const char *msg) {
  p->refs = 1;
  pump_unref(p);
  napi_throw_type_error(env, NULL, msg);
  return NULL;
}

/* startPump's arguments: the pump they describe (fds, idle limit, prefixes, budgets), or NULL having thrown */
static pump_t *pump_from_args(napi_env env, size_t argc, napi_value *argv) {
  int32_t fa, fb, idle;
  if (napi_get_value_int32(env, argv[0], &fa) != napi_ok || napi_get_value_int32(env, argv[1], &fb) != napi_ok ||
      napi_get_value_int32(env, argv[4], &idle) != napi_ok || fa < 0 || fb < 0) {
    napi_throw_type_error(env, NULL, "startPump: fds and idleMs must be integers");
    return NULL;
  }
  pump_t *p = calloc(1, sizeof *p);
  if (!p) { throw_errno(env, "calloc", ENOMEM); return NULL; }
  p->io.fd[0] = fa;
  p->io.fd[1] = fb;
  p->io.idle_ms = idle;
  p->io.bytes = p->bytes;
  p->refs = 2;
  p->io.efd = -1;
  p->io.pipefd[0][0] = p->io.pipefd[0][1] = p->io.pipefd[1][0] = p->io.pipefd[1][1] = -1;
  pthread_mutex_init(&p->mu, NULL);
  if (copy_prefix(env, argv[2], &p->io.prefix[0], &p->io.prefix_len[0]) || copy_prefix(env, argv[3], &p->io.prefix[1], &p->io.prefix_len[1]))
    return pump_refuse(env, p, "startPump: prefixes must be Buffers or null");
  for (int d = 0; d < 2; d++) {
    int bad = 0;
    if (argc > 6 + (size_t)d) p->io.budget[d] = mm_budget_from_js(env, argv[6 + d], &bad);
    if (bad) return pump_refuse(env, p, "startPump: budgets must be budgetCreate() handles or null");
  }
  return p;
}

/* the pump's pipes, its cancel eventfd and the callback's threadsafe function: 0, or -1 having freed it and thrown */
static int pump_open(napi_env env, pump_t *p, napi_value callback) {
  int err = splice_io_pipes(&p->io);
  if (!err) {
    p->io.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (p->io.efd < 0) err = errno;
  }
  napi_value name;
  int tsfn_failed = !err && (napi_create_string_utf8(env, "mmproxy.pump", NAPI_AUTO_LENGTH, &name) != napi_ok ||
    napi_create_threadsafe_function(env, callback, NULL, name, 0, 1, NULL, NULL, NULL, pump_call_js, &p->tsfn) != napi_ok);
  if (!err && !tsfn_failed) return 0;
  splice_io_close_pipes(&p->io);
  if (p->io.efd >= 0) close(p->io.efd);
  p->refs = 1;
  pump_unref(p);
  if (err) throw_errno(env, "startPump: pipe/eventfd", err);
  else napi_throw_error(env, NULL, "startPump: napi_create_threadsafe_function failed");
  return -1;
}

/* run the relay: on the event pool (relaypool.c) by default, a thread of its own when the pool cannot run or
 * relayMode chose it; a thread that cannot start is reported through the normal end, so JavaScript cleans up in
 * one place */
static void pump_start(pump_t *p) {
  if (relay_pool_enabled() && relay_pool_submit(&p->io, pump_pool_end, p) == 0) return;
  int rc = mm_spawn_detached(pump_thread, p, 256);
  if (rc == 0) return;
  p->io.reason = R_ERROR;
  p->io.err = rc;
  p->io.side = -1;
  splice_io_close_pipes(&p->io);
  pthread_mutex_lock(&p->mu);
  p->finished = 1;
  close(p->io.efd);
  p->io.efd = -1;
  pthread_mutex_unlock(&p->mu);
  napi_call_threadsafe_function(p->tsfn, p, napi_tsfn_nonblocking);
  napi_release_threadsafe_function(p->tsfn, napi_tsfn_release);
}

static napi_value StartPump(napi_env env, napi_callback_info info) {
  size_t argc = 8;
  napi_value argv[8];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 6) {
    napi_throw_type_error(env, NULL, "startPump(fdA, fdB, prefixAtoB, prefixBtoA, idleMs, callback, budgetAtoB?, budgetBtoA?)");
    return NULL;
  }
  pump_t *p = pump_from_args(env, argc, argv);
  if (!p || pump_open(env, p, argv[5]) != 0) return NULL;
  napi_value ext = NULL;
  if (napi_create_external(env, p, pump_finalize, NULL, &ext) != napi_ok) {
    napi_get_undefined(env, &ext);
    /* cannot hand a handle back: still run, nobody can cancel it, but it ends with the sockets */
    p->refs = 1;
  }
  pump_start(p);
  return ext;
}

static pump_t *get_pump(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1) return NULL;
  void *data = NULL;
  if (napi_get_value_external(env, argv[0], &data) != napi_ok) return NULL;
  return data;
}

static napi_value PumpStats(napi_env env, napi_callback_info info) {
  pump_t *p = get_pump(env, info);
  if (!p) { napi_throw_type_error(env, NULL, "pumpStats(handle)"); return NULL; }
  napi_value arr, v;
  CHECK(napi_create_array_with_length(env, 2, &arr));
  for (uint32_t d = 0; d < 2; d++) {
    CHECK(napi_create_double(env, (double)__atomic_load_n(&p->bytes[d], __ATOMIC_RELAXED), &v));
    CHECK(napi_set_element(env, arr, d, v));
  }
  return arr;
}

static napi_value PumpCancel(napi_env env, napi_callback_info info) {
  pump_t *p = get_pump(env, info);
  if (!p) { napi_throw_type_error(env, NULL, "pumpCancel(handle)"); return NULL; }
  pthread_mutex_lock(&p->mu);
  if (!p->finished && p->io.efd >= 0) {
    uint64_t one = 1;
    ssize_t w = write(p->io.efd, &one, sizeof one);
    (void)w;
  }
  pthread_mutex_unlock(&p->mu);
  napi_value u;
  napi_get_undefined(env, &u);
  return u;
}

/*
 * relayMode(mode?, threads?) -> {mode, threads}   BENCH ONLY (proxy/src/bench/gw-runner.ts): the relay spliced
 * tunnels started from now on get: "pool" (the default: relaypool.c's epoll threads) or "thread" (a thread per
 * tunnel, splice_run: the relay before issue 52 item 2, kept so that the concurrency bench measures both in one
 * run). threads: the pool's thread count (default min(2, CPUs)), before its first tunnel only. No config field or CLI flag reaches it.
 */
static napi_value RelayMode(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], res, v;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  char mode[16] = {0};
  size_t ml = 0;
  int32_t threads = 0;
  napi_valuetype t0 = napi_undefined, t1 = napi_undefined;
  if (argc >= 1) napi_typeof(env, argv[0], &t0);
  if (argc >= 2) napi_typeof(env, argv[1], &t1);
  if (t0 != napi_undefined) {
    if (napi_get_value_string_utf8(env, argv[0], mode, sizeof mode, &ml) != napi_ok || (strcmp(mode, "pool") != 0 && strcmp(mode, "thread") != 0) ||
        (t1 != napi_undefined && (napi_get_value_int32(env, argv[1], &threads) != napi_ok || threads < 0 || threads > 8))) {
      napi_throw_type_error(env, NULL, "relayMode(mode?: 'pool' | 'thread', threads?: 0-8)");
      return NULL;
    }
    if (relay_pool_configure(strcmp(mode, "pool") == 0, threads) != 0) {
      napi_throw_error(env, NULL, "relayMode: the pool's thread count is fixed once it has run a tunnel");
      return NULL;
    }
  }
  CHECK(napi_create_object(env, &res));
  CHECK(napi_create_string_utf8(env, relay_pool_enabled() ? "pool" : "thread", NAPI_AUTO_LENGTH, &v));
  CHECK(napi_set_named_property(env, res, "mode", v));
  CHECK(napi_create_int32(env, relay_pool_threads(), &v));
  CHECK(napi_set_named_property(env, res, "threads", v));
  return res;
}

/*
 * setTcpLiveness(fd, idleMs, intervalMs, probes, userTimeoutMs) -> 0 or errno
 * Dead-peer detection on a tunnel socket: TCP keepalive (SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL,
 * TCP_KEEPCNT) finds a silent peer that vanished (no FIN, no RST); TCP_USER_TIMEOUT bounds how long sent
 * data may stay unacknowledged. Either way the socket fails with ETIMEDOUT and the relay resets the tunnel.
 */
static napi_value SetTcpLiveness(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t fd = -1, idle = 0, intvl = 0, cnt = 0;
  uint32_t user = 0;
  if (argc < 5 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || napi_get_value_int32(env, argv[1], &idle) != napi_ok ||
      napi_get_value_int32(env, argv[2], &intvl) != napi_ok || napi_get_value_int32(env, argv[3], &cnt) != napi_ok ||
      napi_get_value_uint32(env, argv[4], &user) != napi_ok || fd < 0) {
    napi_throw_type_error(env, NULL, "setTcpLiveness(fd, idleMs, intervalMs, probes, userTimeoutMs)");
    return NULL;
  }
  int on = 1, idle_s = idle < 1000 ? 1 : idle / 1000, intvl_s = intvl < 1000 ? 1 : intvl / 1000, rc = 0;
  if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on) < 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s) < 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl_s, sizeof intvl_s) < 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt) < 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user, sizeof user) < 0) rc = errno;
  napi_value v;
  napi_create_int32(env, rc, &v);
  return v;
}


/* ---------------------------------------------------------------- bindDeviceSocket */

static napi_value BindDeviceSocket(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  char host[INET6_ADDRSTRLEN + 1], ifname[IF_NAMESIZE + 1];
  size_t hl = 0, il = 0;
  int32_t port = -1;
  if (argc < 3 || napi_get_value_string_utf8(env, argv[0], host, sizeof host, &hl) != napi_ok ||
      napi_get_value_int32(env, argv[1], &port) != napi_ok ||
      napi_get_value_string_utf8(env, argv[2], ifname, sizeof ifname, &il) != napi_ok ||
      port < 0 || port > 65535 || il == 0 || il >= IF_NAMESIZE) {
    napi_throw_type_error(env, NULL, "bindDeviceSocket(host, port, ifname): an IP literal, a port 0-65535 and an interface name of 1-15 bytes");
    return NULL;
  }
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  socklen_t sl;
  int family;
  struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
    family = AF_INET; a4->sin_family = AF_INET; a4->sin_port = htons((uint16_t)port); sl = sizeof *a4;
  } else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
    family = AF_INET6; a6->sin6_family = AF_INET6; a6->sin6_port = htons((uint16_t)port); sl = sizeof *a6;
  } else {
    napi_throw_type_error(env, NULL, "bindDeviceSocket: host is not an IP literal");
    return NULL;
  }
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
  if (fd < 0) return throw_errno(env, "socket", errno);
  int on = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) < 0) { int e = errno; close(fd); return throw_errno(env, "setsockopt(SO_REUSEADDR)", e); }
  if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, (socklen_t)il) < 0) { int e = errno; close(fd); return throw_errno(env, "setsockopt(SO_BINDTODEVICE)", e); }
  if (bind(fd, (struct sockaddr *)&ss, sl) < 0) { int e = errno; close(fd); return throw_errno(env, "bind", e); }
  napi_value v;
  CHECK(napi_create_int32(env, fd, &v));
  return v;
}

void tlsrelay_register(napi_env env, napi_value exports);

static napi_value Init(napi_env env, napi_value exports) {
  tlsrelay_register(env, exports);
  napi_property_descriptor props[] = {
      {"getOriginalDst", NULL, GetOriginalDst, NULL, NULL, NULL, napi_default, NULL},
      {"budgetCreate", NULL, BudgetCreate, NULL, NULL, NULL, napi_default, NULL},
      {"budgetSent", NULL, BudgetSent, NULL, NULL, NULL, napi_default, NULL},
      {"startPump", NULL, StartPump, NULL, NULL, NULL, napi_default, NULL},
      {"pumpStats", NULL, PumpStats, NULL, NULL, NULL, napi_default, NULL},
      {"pumpCancel", NULL, PumpCancel, NULL, NULL, NULL, napi_default, NULL},
      {"relayMode", NULL, RelayMode, NULL, NULL, NULL, napi_default, NULL},
      {"setTcpLiveness", NULL, SetTcpLiveness, NULL, NULL, NULL, napi_default, NULL},
      {"bindDeviceSocket", NULL, BindDeviceSocket, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  /* testHooks: this build reads the MMPROXY_TLS_TEST_* switches (a test build); false in the shipped addon */
#ifdef MMPROXY_TEST_HOOKS
  const bool test_hooks = true;
#else
  const bool test_hooks = false;
#endif
  napi_value hooks;
  napi_get_boolean(env, test_hooks, &hooks);
  napi_set_named_property(env, exports, "testHooks", hooks);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
