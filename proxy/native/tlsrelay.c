/*
 * Native TLS 1.3 tunnel endpoint: handshake, first-frame exchange and the relay between a plaintext TCP
 * socket and a TLS socket, in a pthread, with the OpenSSL that Node itself exports (no extra library).
 *
 *   tlsContext(caPem, certPem, keyPem, isServer) -> ctx
 *       TLS 1.3 only, peer certificate required and verified against caPem, no session tickets.
 *   tlsStart(ctx, fd, isServer, deadlineMs, firstWrite, headerMax, cb) -> handle
 *       Phase 1 (thread): handshake, write `firstWrite` (the origin's OPEN), read one header frame
 *       (8-byte frame header, then its body if it fits in headerMax), all before `deadlineMs`. Then
 *       cb({phase: 1, ok, error, uris, frame}) on the JS thread, and the thread waits for a command.
 *   tlsContinue(handle, replyOrNull, relayFd, idleMs)
 *       Phase 2: write `reply` (the terminus' REPLY) and relay TLS <-> relayFd (relayFd < 0: close). The relay
 *       runs on our own TLS 1.3 records (tls13relay.c) from the record OpenSSL would have handled next, or on
 *       OpenSSL's (relay_loop below) with MMPROXY_TLS_RECORDS=openssl or a suite tls13rec.c does not run.
 *       cb({phase: 2, tlsToPlain, plainToTls, reason, side, errno}) when done. Half-close: plaintext EOF
 *       -> close_notify + FIN; close_notify received -> FIN on the plaintext socket. A TLS stream that ends
 *       without close_notify (peer killed) is a reset: the plaintext socket gets an RST.
 *   tlsStart(..., cb, flags): flags bit 0 = splice-capable (keeps OPEN/REPLY for the binding).
 *   tlsContinue(handle, replyOrNull, relayFd, idleMs, splice): splice = authenticated splice (PROTOCOL.md
 *       section 7): BIND frames carrying TLS exporter values over OPEN || REPLY are exchanged inside TLS, then
 *       the payload is relayed by splice.c on the same TCP connection, not encrypted again.
 *   tlsStats(handle) -> [tlsToPlain, plainToTls];  tlsCancel(handle);  tlsLive() -> sessions not yet freed
 * The sockets are never closed here: JavaScript owns and closes them. Every end other than a clean one
 * (both directions finished) arms SO_LINGER {1, 0} on both sockets, so JavaScript's close is an RST.
 * Memory: the OpenSSL session, the header buffers and the relay buffers are freed by the thread when the
 * session ends; only the small handle struct waits for V8's collector, and V8 is told about it (and about
 * the larger cost of a running session) with napi_adjust_external_memory.
 */
#define _GNU_SOURCE
#include "tlsr.h"
#include "tls13relay.h"
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

static const char *t_reason_names[] = {"eof", "reset", "idle", "cancel", "error"};

static void set_num(napi_env env, napi_value o, const char *k, double v) {
  napi_value x;
  napi_create_double(env, v, &x);
  napi_set_named_property(env, o, k, x);
}
static void set_str(napi_env env, napi_value o, const char *k, const char *v) {
  napi_value x;
  napi_create_string_utf8(env, v, NAPI_AUTO_LENGTH, &x);
  napi_set_named_property(env, o, k, x);
}

static void tlsr_call_js(napi_env env, napi_value cb, void *context, void *data) {
  tlsr_msg_t *m = data;
  tlsr_t *t = m->t;
  int phase = m->phase;
  free(m);
  if (env && cb) {
    napi_value res, undef;
    napi_create_object(env, &res);
    set_num(env, res, "phase", phase);
    if (phase == 1) {
      napi_value b, arr, s;
      napi_get_boolean(env, t->ok, &b);
      napi_set_named_property(env, res, "ok", b);
      napi_get_boolean(env, t->handshook, &b);
      napi_set_named_property(env, res, "handshook", b);
      set_str(env, res, "error", t->error);
      napi_create_array_with_length(env, (size_t)t->nuris, &arr);
      for (int i = 0; i < t->nuris; i++) {
        napi_create_string_utf8(env, t->uris[i], NAPI_AUTO_LENGTH, &s);
        napi_set_element(env, arr, (uint32_t)i, s);
      }
      napi_set_named_property(env, res, "uris", arr);
      void *dst;
      napi_value buf;
      napi_create_buffer_copy(env, t->frame_len, t->frame ? t->frame : (unsigned char *)"", &dst, &buf);
      napi_set_named_property(env, res, "frame", buf);
    } else {
      set_num(env, res, "tlsToPlain", (double)__atomic_load_n(&t->bytes[0], __ATOMIC_RELAXED));
      set_num(env, res, "plainToTls", (double)__atomic_load_n(&t->bytes[1], __ATOMIC_RELAXED));
      set_str(env, res, "reason", t_reason_names[t->reason < 0 ? T_ERROR : t->reason]);
      set_str(env, res, "side", t->side == 0 ? "tls" : t->side == 1 ? "plain" : "");
      set_num(env, res, "errno", t->err);
      set_str(env, res, "error", t->error);
    }
    napi_get_undefined(env, &undef);
    napi_call_function(env, undef, cb, 1, &res, NULL);
  }
  if (phase == 1) tlsr_free_phase1(t); /* the thread no longer touches them; JS has its copies */
  if (phase == 2) {
    int64_t ext;
    if (env) napi_adjust_external_memory(env, -LIVE_COST, &ext);
    tlsr_unref(t);
  }
}

static void tlsr_finalize(napi_env env, void *data, void *hint) {
  int64_t ext;
  napi_adjust_external_memory(env, -(int64_t)sizeof(tlsr_t), &ext);
  tlsr_unref((tlsr_t *)data);
}
/* what tlsContext returns: the OpenSSL context and how its sessions relay (read once, from the environment) */
typedef struct {
  SSL_CTX *ctx;
  int own_records;             /* 1: our own record layer after the header frames; MMPROXY_TLS_RECORDS=openssl: 0 */
  uint64_t key_update_records; /* MMPROXY_TLS_KEY_UPDATE_RECORDS, 0 = the default (tls13relay.h) */
  int key_update_request;      /* MMPROXY_TLS_KEY_UPDATE_REQUEST=1: our KeyUpdates ask for the peer's (tests) */
  int early_key_update;        /* MMPROXY_TLS_TEST_EARLY_KEY_UPDATE=1: a KeyUpdate (update_requested) right after our Finished (tests) */
} mm_ctx_t;

static void ctx_finalize(napi_env env, void *data, void *hint) {
  mm_ctx_t *c = data;
  SSL_CTX_free(c->ctx);
  free(c);
}

static int get_buf(napi_env env, napi_value v, unsigned char **d, size_t *n) {
  bool is = false;
  napi_is_buffer(env, v, &is);
  if (!is) { *d = NULL; *n = 0; return 0; }
  return napi_get_buffer_info(env, v, (void **)d, n) == napi_ok;
}

static napi_value throw_msg(napi_env env, const char *m) {
  char buf[400];
  unsigned long e = ERR_get_error();
  char es[200] = "";
  if (e) ERR_error_string_n(e, es, sizeof es);
  snprintf(buf, sizeof buf, "%s%s%s", m, e ? ": " : "", es);
  ERR_clear_error();
  napi_throw_error(env, NULL, buf);
  return NULL;
}

static napi_value TlsContext(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  unsigned char *ca, *cert, *key;
  size_t nca, ncert, nkey;
  bool is_server = false;
  if (argc < 4 || !get_buf(env, argv[0], &ca, &nca) || !get_buf(env, argv[1], &cert, &ncert) || !get_buf(env, argv[2], &key, &nkey)) {
    napi_throw_type_error(env, NULL, "tlsContext(caPem, certPem, keyPem, isServer)");
    return NULL;
  }
  napi_get_value_bool(env, argv[3], &is_server);
  ERR_clear_error();
  /* records per key: the AES-GCM limit of RFC 8446 section 5.5 (2^24.5 full records) bounds it, for every suite */
  const char *ku = getenv("MMPROXY_TLS_KEY_UPDATE_RECORDS");
  char *end = NULL;
  unsigned long long ku_records = ku ? strtoull(ku, &end, 10) : 0;
  if (ku && (!*ku || *end || ku[0] == '-' || ku_records < 1 || ku_records > TLS13_KEY_UPDATE_MAX)) {
    char m[160];
    snprintf(m, sizeof m, "MMPROXY_TLS_KEY_UPDATE_RECORDS must be a whole number from 1 to %llu (RFC 8446 section 5.5)", (unsigned long long)TLS13_KEY_UPDATE_MAX);
    napi_throw_range_error(env, NULL, m);
    return NULL;
  }
  const char *why = NULL;
  SSL_CTX *ctx = tlsr_ssl_ctx_new(ca, nca, cert, ncert, key, nkey, &why);
  if (!ctx) return throw_msg(env, why);
  mm_ctx_t *c = calloc(1, sizeof *c);
  if (!c) { SSL_CTX_free(ctx); return throw_msg(env, "out of memory"); }
  c->ctx = ctx;
  const char *rec = getenv("MMPROXY_TLS_RECORDS");
  c->own_records = !(rec && strcmp(rec, "openssl") == 0);
  c->key_update_records = ku_records;
  c->key_update_request = getenv("MMPROXY_TLS_KEY_UPDATE_REQUEST") && strcmp(getenv("MMPROXY_TLS_KEY_UPDATE_REQUEST"), "1") == 0;
#ifdef MMPROXY_TEST_HOOKS
  /* test builds only (binding.gyp mm_test_hooks): the shipped addon never sends an early KeyUpdate */
  c->early_key_update = getenv("MMPROXY_TLS_TEST_EARLY_KEY_UPDATE") && strcmp(getenv("MMPROXY_TLS_TEST_EARLY_KEY_UPDATE"), "1") == 0;
#else
  c->early_key_update = 0;
#endif
  napi_value ext;
  if (napi_create_external(env, c, ctx_finalize, NULL, &ext) != napi_ok) { SSL_CTX_free(ctx); free(c); return throw_msg(env, "tlsContext: external"); }
  return ext;
}

static napi_value TlsStart(napi_env env, napi_callback_info info) {
  size_t argc = 9;
  napi_value argv[9];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  mm_ctx_t *ctx = NULL;
  uint32_t flags = 0;
  if (argc >= 9) napi_get_value_uint32(env, argv[8], &flags);
  int32_t fd = -1;
  bool is_server = false;
  double deadline_ms = 0;
  uint32_t hmax = 0;
  if (argc < 8 || napi_get_value_external(env, argv[0], (void **)&ctx) != napi_ok || napi_get_value_int32(env, argv[1], &fd) != napi_ok ||
      napi_get_value_bool(env, argv[2], &is_server) != napi_ok || napi_get_value_double(env, argv[3], &deadline_ms) != napi_ok ||
      napi_get_value_uint32(env, argv[5], &hmax) != napi_ok || fd < 0) {
    napi_throw_type_error(env, NULL, "tlsStart(ctx, fd, isServer, deadlineMs, firstWrite, headerMax, expectUri, cb, flags?)");
    return NULL;
  }
  tlsr_t *t = calloc(1, sizeof *t);
  if (!t) return throw_msg(env, "out of memory");
  t->fd = fd;
  t->pfd = -1;
  t->is_server = is_server;
  t->deadline = mm_now_ms() + (int64_t)deadline_ms;
  t->hs_ms = (int64_t)deadline_ms;
  t->splice_ok = (flags & 1) != 0;
  t->header_max = hmax > 65536 + 8 ? 65536 + 8 : hmax < 8 ? 8 : hmax;
  t->refs = 2;
  pthread_mutex_init(&t->mu, NULL);
  pthread_cond_init(&t->cv, NULL);
  unsigned char *first;
  size_t nfirst;
  if (get_buf(env, argv[4], &first, &nfirst) && nfirst > 0) {
    t->first = malloc(nfirst);
    if (t->first) { memcpy(t->first, first, nfirst); t->first_len = nfirst; }
  }
  napi_valuetype et;
  napi_typeof(env, argv[6], &et);
  if (et == napi_string) {
    size_t n = 0;
    napi_get_value_string_utf8(env, argv[6], NULL, 0, &n);
    t->expect_uri = malloc(n + 1);
    if (t->expect_uri) napi_get_value_string_utf8(env, argv[6], t->expect_uri, n + 1, &n);
  }
  t->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  t->ssl = SSL_new(ctx->ctx);
  t->own_records = ctx->own_records;
  t->key_update_records = ctx->key_update_records;
  t->key_update_request = ctx->key_update_request;
  t->early_key_update = ctx->early_key_update;
  if (t->efd < 0 || !t->ssl || SSL_set_fd(t->ssl, fd) != 1 || SSL_set_ex_data(t->ssl, 0, t) != 1) {
    if (t->efd >= 0) close(t->efd);
    t->refs = 1; tlsr_unref(t);
    return throw_msg(env, "tlsStart: setup failed");
  }
  tlsr_ssl_setup(t);
  napi_value name;
  napi_create_string_utf8(env, "mmproxy.tls", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, argv[7], NULL, name, 0, 1, NULL, NULL, NULL, tlsr_call_js, &t->tsfn) != napi_ok) {
    close(t->efd);
    t->refs = 1; tlsr_unref(t);
    return throw_msg(env, "tlsStart: threadsafe function");
  }
  napi_value ext;
  int64_t total;
  if (napi_create_external(env, t, tlsr_finalize, NULL, &ext) != napi_ok) { t->refs = 1; napi_get_undefined(env, &ext); }
  else napi_adjust_external_memory(env, (int64_t)sizeof(tlsr_t), &total);
  napi_adjust_external_memory(env, LIVE_COST, &total);
  __atomic_add_fetch(&tlsr_live_sessions, 1, __ATOMIC_ACQ_REL);
  int rc = mm_spawn_detached(tlsr_thread, t, 512);
  if (rc != 0) {
    napi_release_threadsafe_function(t->tsfn, napi_tsfn_abort);
    close(t->efd);
    __atomic_sub_fetch(&tlsr_live_sessions, 1, __ATOMIC_ACQ_REL);
    napi_adjust_external_memory(env, -LIVE_COST, &total);
    tlsr_unref(t);
    return throw_msg(env, "tlsStart: pthread_create failed");
  }
  return ext;
}

static tlsr_t *get_t(napi_env env, napi_value v) {
  void *d = NULL;
  if (napi_get_value_external(env, v, &d) != napi_ok) return NULL;
  return d;
}

static napi_value TlsContinue(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  tlsr_t *t = argc >= 4 ? get_t(env, argv[0]) : NULL;
  int bad = 0;
  mm_budget *budget = argc >= 6 ? mm_budget_from_js(env, argv[5], &bad) : NULL;
  if (bad) { napi_throw_type_error(env, NULL, "tlsContinue: budget must be a budgetCreate() handle or null"); return NULL; }
  bool splice = false;
  if (argc >= 5) napi_get_value_bool(env, argv[4], &splice);
  int32_t pfd = -1, idle = 0;
  if (!t || napi_get_value_int32(env, argv[2], &pfd) != napi_ok || napi_get_value_int32(env, argv[3], &idle) != napi_ok) {
    mm_budget_put(budget);
    napi_throw_type_error(env, NULL, "tlsContinue(handle, replyOrNull, relayFd, idleMs, splice?, budget?)");
    return NULL;
  }
  unsigned char *r;
  size_t nr;
  pthread_mutex_lock(&t->mu);
  if (!t->have_cmd && !t->cancelled) {
    if (get_buf(env, argv[1], &r, &nr) && nr > 0) {
      t->reply = malloc(nr);
      if (t->reply) { memcpy(t->reply, r, nr); t->reply_len = nr; }
    }
    t->pfd = pfd;
    t->idle_ms = idle;
    t->splice = splice && t->splice_ok;
    /* the budget counts spliced bytes only: a session relaying inside TLS is refused a budget by the caller */
    if (t->splice && !t->budget) { t->budget = budget; budget = NULL; }
    t->have_cmd = 1;
    pthread_cond_signal(&t->cv);
  }
  pthread_mutex_unlock(&t->mu);
  mm_budget_put(budget);
  napi_value u;
  napi_get_undefined(env, &u);
  return u;
}

static napi_value TlsCancel(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  tlsr_t *t = argc >= 1 ? get_t(env, argv[0]) : NULL;
  if (!t) { napi_throw_type_error(env, NULL, "tlsCancel(handle)"); return NULL; }
  pthread_mutex_lock(&t->mu);
  t->cancelled = 1;
  pthread_cond_signal(&t->cv);
  if (!t->finished && t->efd >= 0) { uint64_t one = 1; ssize_t w = write(t->efd, &one, sizeof one); (void)w; }
  pthread_mutex_unlock(&t->mu);
  napi_value u;
  napi_get_undefined(env, &u);
  return u;
}

static napi_value TlsStats(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  tlsr_t *t = argc >= 1 ? get_t(env, argv[0]) : NULL;
  if (!t) { napi_throw_type_error(env, NULL, "tlsStats(handle)"); return NULL; }
  napi_value arr, v;
  napi_create_array_with_length(env, 2, &arr);
  for (uint32_t d = 0; d < 2; d++) {
    napi_create_double(env, (double)__atomic_load_n(&t->bytes[d], __ATOMIC_RELAXED), &v);
    napi_set_element(env, arr, d, v);
  }
  return arr;
}

/* tlsSecretsHeld() -> number of sessions still holding traffic secrets (0 once every session has moved past them) */
static napi_value TlsSecretsHeld(napi_env env, napi_callback_info info) {
  napi_value v;
  napi_create_int32(env, __atomic_load_n(&tlsr_secrets_held, __ATOMIC_ACQUIRE), &v);
  return v;
}

/* tlsLive() -> number of sessions whose OpenSSL state is still allocated (0 once every thread has ended) */
static napi_value TlsLive(napi_env env, napi_callback_info info) {
  napi_value v;
  napi_create_int32(env, __atomic_load_n(&tlsr_live_sessions, __ATOMIC_ACQUIRE), &v);
  return v;
}

/* tlsRecordStats() -> [sessions on our records, on OpenSSL's, KeyUpdates received by origins, sent by origins,
 * received by termini, sent by termini] */
static napi_value TlsRecordStats(napi_env env, napi_callback_info info) {
  napi_value arr, v;
  napi_create_array_with_length(env, RECORD_STATS, &arr);
  for (uint32_t i = 0; i < RECORD_STATS; i++) {
    napi_create_double(env, (double)__atomic_load_n(&tlsr_record_stats[i], __ATOMIC_RELAXED), &v);
    napi_set_element(env, arr, i, v);
  }
  return arr;
}

void tlsrelay_register(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"tlsContext", NULL, TlsContext, NULL, NULL, NULL, napi_default, NULL},
      {"tlsStart", NULL, TlsStart, NULL, NULL, NULL, napi_default, NULL},
      {"tlsContinue", NULL, TlsContinue, NULL, NULL, NULL, napi_default, NULL},
      {"tlsCancel", NULL, TlsCancel, NULL, NULL, NULL, napi_default, NULL},
      {"tlsStats", NULL, TlsStats, NULL, NULL, NULL, napi_default, NULL},
      {"tlsLive", NULL, TlsLive, NULL, NULL, NULL, napi_default, NULL},
      {"tlsSecretsHeld", NULL, TlsSecretsHeld, NULL, NULL, NULL, napi_default, NULL},
      {"tlsRecordStats", NULL, TlsRecordStats, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
}
