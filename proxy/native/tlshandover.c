/* Session hand-over of the native mTLS endpoint (see tlsr.h): the session's thread runs phase 1, waits for
 * JavaScript's command, then hands the connection to our own TLS 1.3 records (tls13relay.c), to OpenSSL's
 * (tlsopenssl.c), or, after the binding exchange, to the kernel splice (splice.c). The thread frees the OpenSSL
 * state when it ends; the handle struct waits for V8's collector (tlsr_unref). */
#define _GNU_SOURCE
#include "tlsr.h"
#include "relaypool.h"
#include "tls13relay.h"
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int tlsr_live_sessions;
uint64_t tlsr_record_stats[RECORD_STATS];

/* buffers that held plaintext (header frames, decrypted data) are wiped before they are freed */
void tlsr_free_phase1(tlsr_t *t) {
  if (t->frame) OPENSSL_clear_free(t->frame, t->header_max);
  t->frame = NULL;
  for (int i = 0; i < t->nuris; i++) free(t->uris[i]);
  t->nuris = 0;
}


void tlsr_unref(tlsr_t *t) {
  if (__atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    if (t->ssl) SSL_free(t->ssl);
    tlsr_wipe_secrets(t);
    tlsr_free_phase1(t);
    if (t->first) OPENSSL_clear_free(t->first, t->first_len);
    if (t->reply) OPENSSL_clear_free(t->reply, t->reply_len);
    free(t->expect_uri);
    if (t->hdr_open) OPENSSL_clear_free(t->hdr_open, t->hdr_open_len);
    if (t->hdr_reply) OPENSSL_clear_free(t->hdr_reply, t->hdr_reply_len);
    mm_budget_put(t->budget);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t);
  }
}

/* one direction's keys where OpenSSL left them: generation `gen` of the keylog secret, record `seq` */
static int dir_at(tls13_dir_t *d, uint16_t suite, const unsigned char *secret, size_t len, unsigned gen, uint64_t seq, int enc) {
  if (!tls13_dir_init(d, suite, secret, len, 0, enc)) return 0;
  for (unsigned k = 0; k < gen; k++)
    if (!tls13_dir_update(d)) return 0; /* tls13_dir_update clears nothing on failure: the caller clears d */
  d->seq = seq;
  return 1;
}

/* Relay on our own TLS 1.3 records (tls13relay.c) from the record OpenSSL would have read or written next. 0 when
 * this session cannot (MMPROXY_TLS_RECORDS=openssl, a suite we do not run, no secrets): OpenSSL relays then. */
static int relay_own(tlsr_t *t) {
  uint16_t suite = (uint16_t)(SSL_CIPHER_get_id(SSL_get_current_cipher(t->ssl)) & 0xffff);
  if (!t->own_records || !tls13_suite_supported(suite) || !t->secret_len[0] || t->secret_len[0] != t->secret_len[1] ||
      !t->counting[0] || !t->counting[1])
    return 0;
  tls13_relay_t r;
  memset(&r, 0, sizeof r);
  size_t avail = (size_t)SSL_pending(t->ssl), got = 0;
  unsigned char *pend = avail ? malloc(avail) : NULL; /* the rest of a record OpenSSL has opened, not yet read */
  int w = t->is_server ? 1 : 0; /* a client writes with the client secret and reads the server's */
  int ok = (!avail || (pend && SSL_read_ex(t->ssl, pend, avail, &got) == 1 && got == avail)) && !SSL_has_pending(t->ssl) &&
           dir_at(&r.wr, suite, t->secret[w], t->secret_len[w], t->gen[1], t->recs[1], 1) &&
           dir_at(&r.rd, suite, t->secret[!w], t->secret_len[!w], t->gen[0], t->recs[0], 0);
  tlsr_wipe_secrets(t);
  if (!ok) {
    tls13_dir_clear(&r.wr);
    tls13_dir_clear(&r.rd);
    if (pend) OPENSSL_clear_free(pend, avail);
    snprintf(t->error, sizeof t->error, "TLS records: cannot take over from OpenSSL");
    t->reason = T_ERROR; t->side = -1;
    return 1;
  }
  r.fd = t->fd; r.pfd = t->pfd; r.efd = t->efd; r.idle_ms = t->idle_ms;
  r.pending = pend; r.pending_len = got;
  r.peer_closed = (SSL_get_shutdown(t->ssl) & SSL_RECEIVED_SHUTDOWN) != 0;
  r.key_update_records = t->key_update_records;
  r.key_update_request = t->key_update_request;
  r.key_update_owed = SSL_get_key_update_type(t->ssl) != SSL_KEY_UPDATE_NONE; /* asked for, not yet sent by OpenSSL */
  r.bytes = t->bytes;
  tls13_relay_run(&r);
  if (pend) { OPENSSL_cleanse(pend, got); free(pend); }
  t->reason = r.reason; t->side = r.side; t->err = r.err;
  if (r.error) snprintf(t->error, sizeof t->error, "%s", r.error);
  __atomic_add_fetch(&tlsr_record_stats[0], 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&tlsr_record_stats[t->is_server ? 4 : 2], r.key_updates[0], __ATOMIC_RELAXED);
  __atomic_add_fetch(&tlsr_record_stats[t->is_server ? 5 : 3], r.key_updates[1], __ATOMIC_RELAXED);
  return 1;
}

static void relay(tlsr_t *t) {
  if (relay_own(t)) return;
  tlsr_wipe_secrets(t); /* OpenSSL relays: it has its own copy of the keys */
  __atomic_add_fetch(&tlsr_record_stats[1], 1, __ATOMIC_RELAXED);
  tlsr_relay_openssl(t);
}

/* ---------------------------------------------------------------- authenticated splice
 * After the accepted REPLY, each side sends one BIND frame inside TLS (the origin after it has checked the
 * terminus' one), carrying a value only the two ends of this TLS session can compute (RFC 8446 section 7.5):
 *   SSL_export_keying_material(label "EXPORTER-mmtp-bind-terminus" / "EXPORTER-mmtp-bind-origin",
 *                              context = OPEN frame || REPLY frame, 32 bytes)
 * Then both switch to the kernel splice on the same TCP connection at the byte that follows the BIND record.
 * Read-ahead is off on such sessions (OpenSSL reads exactly one record at a time), so no payload byte is ever
 * inside OpenSSL when the switch happens; anything left in OpenSSL's buffers is refused. */
#define BIND_LEN 32
#define BIND_FRAME_LEN (8 + BIND_LEN)
#define FRAME_BIND 4

static int bind_value(tlsr_t *t, int origin, unsigned char out[BIND_LEN]) {
  const char *label = origin ? "EXPORTER-mmtp-bind-origin" : "EXPORTER-mmtp-bind-terminus";
  size_t n = t->hdr_open_len + t->hdr_reply_len;
  unsigned char *c = malloc(n ? n : 1);
  if (!c || !t->hdr_open || !t->hdr_reply) { free(c); return 0; }
  memcpy(c, t->hdr_open, t->hdr_open_len);
  memcpy(c + t->hdr_open_len, t->hdr_reply, t->hdr_reply_len);
  int ok = SSL_export_keying_material(t->ssl, out, BIND_LEN, label, strlen(label), c, n, 1) == 1;
  OPENSSL_cleanse(c, n);
  free(c);
  return ok;
}

static void bind_frame(unsigned char f[BIND_FRAME_LEN], const unsigned char v[BIND_LEN]) {
  memcpy(f, "MMTP", 4);
  f[4] = 1;
  f[5] = FRAME_BIND;
  f[6] = 0;
  f[7] = BIND_LEN;
  memcpy(f + 8, v, BIND_LEN);
}

static int ssl_write_all(tlsr_t *t, const unsigned char *b, size_t n, const char *what) {
  int rc = 0;
  size_t off = 0;
  while (off < n) {
    SSL_RETRY(t, SSL_write(t->ssl, b + off, (int)(n - off)), what);
    if (!rc) return 0;
    off += (size_t)rc;
  }
  return 1;
}

/* read the peer's BIND frame and compare it (constant time) with what it must be */
static int bind_check(tlsr_t *t, int peer_is_origin) {
  unsigned char want[BIND_LEN], got[BIND_FRAME_LEN], f[BIND_FRAME_LEN];
  if (!bind_value(t, peer_is_origin, want)) { tlsr_errstr(t, "binding: exporter"); return 0; }
  bind_frame(f, want);
  size_t have = 0;
  int rc = 0;
  while (have < BIND_FRAME_LEN) {
    SSL_RETRY(t, SSL_read(t->ssl, got + have, (int)(BIND_FRAME_LEN - have)), "binding: read");
    if (!rc) return 0;
    have += (size_t)rc;
    if (have >= 8 && memcmp(got, f, 8) != 0) break; /* not a BIND frame: refuse at once */
  }
  int ok = have == BIND_FRAME_LEN && CRYPTO_memcmp(got, f, BIND_FRAME_LEN) == 0;
  OPENSSL_cleanse(want, sizeof want);
  OPENSSL_cleanse(f, sizeof f);
  if (!ok) { snprintf(t->error, sizeof t->error, "binding: the peer's BIND frame is not this session's"); return 0; }
  return 1;
}

static int bind_send(tlsr_t *t, int origin, const unsigned char *before, size_t before_len) {
  unsigned char v[BIND_LEN];
  if (!bind_value(t, origin, v)) { tlsr_errstr(t, "binding: exporter"); return 0; }
  size_t n = before_len + BIND_FRAME_LEN;
  unsigned char *b = malloc(n);
  if (!b) { snprintf(t->error, sizeof t->error, "out of memory"); return 0; }
  if (before_len) memcpy(b, before, before_len);
  bind_frame(b + before_len, v);
  int ok = ssl_write_all(t, b, n, "binding: write"); /* REPLY and BIND in one record on the terminus */
  OPENSSL_cleanse(v, sizeof v);
  OPENSSL_cleanse(b, n);
  free(b);
  return ok;
}

/* the spliced relay has ended (splice_end done): its end is the session's */
static void splice_done(tlsr_t *t, splice_io_t *io) {
  if (io->reason == R_EOF) { struct linger off = {0, 0}; setsockopt(t->fd, SOL_SOCKET, SO_LINGER, &off, sizeof off); }
  t->reason = io->reason; /* R_* and T_* name the same ends */
  t->side = io->side;
  t->err = io->err;
  free(io);
}

static void tlsr_end(tlsr_t *t);
static void splice_pool_end(splice_io_t *io, void *arg) {
  splice_done(arg, io);
  tlsr_end(arg);
}

/* Phase 2 of an authenticated-splice session. Terminus: REPLY + its BIND, then check the origin's BIND.
 * Origin (REPLY already read in phase 1): check the terminus' BIND, then send its own. Then splice. Returns 1
 * when the relay went to the event pool (relaypool.c), which then ends the session (tlsr_end); 0 when it is over. */
static int splice_phase2(tlsr_t *t) {
  if (t->is_server && t->reply) { /* the REPLY as sent is part of the binding's context */
    t->hdr_reply = malloc(t->reply_len);
    if (t->hdr_reply) { memcpy(t->hdr_reply, t->reply, t->reply_len); t->hdr_reply_len = t->reply_len; }
  }
  int ok = t->is_server
    ? bind_send(t, 0, t->reply, t->reply_len) && bind_check(t, 1)
    : bind_check(t, 0) && bind_send(t, 1, NULL, 0);
  if (ok && (SSL_pending(t->ssl) > 0 || SSL_has_pending(t->ssl))) {
    snprintf(t->error, sizeof t->error, "binding: TLS data after the BIND frame");
    ok = 0;
  }
  if (!ok) { t->reason = T_ERROR; t->side = 0; return 0; }
  splice_io_t *io = calloc(1, sizeof *io);
  if (!io) { t->reason = T_ERROR; t->err = ENOMEM; t->side = -1; snprintf(t->error, sizeof t->error, "out of memory"); return 0; }
  io->fd[0] = t->fd; /* direction 0 = tunnel -> plaintext, as t->bytes[0] */
  io->fd[1] = t->pfd;
  io->efd = t->efd;
  io->idle_ms = t->idle_ms;
  io->bytes = t->bytes;
  io->side = -1;
  io->budget[1] = t->budget; /* direction 1 = plaintext -> tunnel: the bytes sent toward the peer */
  int e = splice_io_pipes(io);
  if (e) { free(io); t->reason = T_ERROR; t->err = e; t->side = -1; snprintf(t->error, sizeof t->error, "pipe: %s", strerror(e)); return 0; }
  /* Without TLS around the payload, a FIN cannot say whether the peer finished or died. So the tunnel socket
   * lingers {1, 0} while spliced: if this process dies, its kernel closes the socket with an RST, never a FIN.
   * A clean half-close is shutdown(SHUT_WR), a FIN whatever the linger; after a clean end linger is cleared,
   * so the final close() still delivers what is queued. */
  mm_arm_reset(t->fd);
  /* the event pool relays it (this thread ends; the pool ends the session), else this thread does */
  if (relay_pool_enabled() && relay_pool_submit(io, splice_pool_end, t) == 0) return 1;
  splice_run(io);
  splice_done(t, io);
  return 0;
}

void *tlsr_thread(void *arg) {
  tlsr_t *t = arg;
  tlsr_phase1(t);
  tlsr_msg_t *m1 = malloc(sizeof *m1);
  if (m1) { m1->t = t; m1->phase = 1; napi_call_threadsafe_function(t->tsfn, m1, napi_tsfn_blocking); }
  /* wait for the command (or cancel) */
  pthread_mutex_lock(&t->mu);
  while (!t->have_cmd && !t->cancelled) pthread_cond_wait(&t->cv, &t->mu);
  int cancelled = t->cancelled;
  pthread_mutex_unlock(&t->mu);
  t->reason = T_CANCEL;
  if (!cancelled && t->splice && t->pfd >= 0) {
    t->deadline = mm_now_ms() + t->hs_ms;
    tlsr_wipe_secrets(t); /* the binding uses OpenSSL's exporter; the splice needs no keys */
    if (splice_phase2(t)) return NULL; /* the pool's thread ends the session */
  } else if (!cancelled) {
    t->deadline = mm_now_ms() + 10000;
    int ok = 1, rc = 0;
    size_t off = 0;
    while (ok && off < t->reply_len) {
      SSL_RETRY(t, SSL_write(t->ssl, t->reply + off, (int)(t->reply_len - off)), "write reply");
      if (!rc) ok = 0; else off += (size_t)rc;
    }
    if (!ok) { t->reason = T_ERROR; t->side = 0; }
    else if (t->pfd >= 0) relay(t);
    else {
      /* refusal: close_notify, FIN; JS closes the socket */
      ERR_clear_error();
      SSL_shutdown(t->ssl);
      shutdown(t->fd, SHUT_WR);
      t->reason = T_EOF;
    }
  }
  tlsr_end(t);
  return NULL;
}

/* The session's end, in its thread or (spliced) on the event pool's: resets, OpenSSL's state freed, JS told. */
static void tlsr_end(tlsr_t *t) {
  /* A forced end (reset, error, idle, cancel, drain) is a reset on both sockets, every time: a cut stream
   * must never look complete. JS closes the sockets; SO_LINGER makes that close an RST. */
  if (t->reason != T_EOF) { mm_arm_reset(t->fd); mm_arm_reset(t->pfd); }
  /* free OpenSSL state now, not when V8 collects the handle: a flood must not pile up session memory */
  SSL_free(t->ssl);
  t->ssl = NULL;
  tlsr_wipe_secrets(t); /* every path: refusals, failures, splice, OpenSSL's relay; never left for V8's collector */
  if (t->first) OPENSSL_clear_free(t->first, t->first_len);
  t->first = NULL;
  if (t->reply) OPENSSL_clear_free(t->reply, t->reply_len);
  t->reply = NULL;
  __atomic_sub_fetch(&tlsr_live_sessions, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_lock(&t->mu);
  t->finished = 1;
  close(t->efd);
  t->efd = -1;
  pthread_mutex_unlock(&t->mu);
  tlsr_msg_t *m2 = malloc(sizeof *m2);
  if (m2) { m2->t = t; m2->phase = 2; napi_call_threadsafe_function(t->tsfn, m2, napi_tsfn_blocking); }
  else tlsr_unref(t);
  napi_release_threadsafe_function(t->tsfn, napi_tsfn_release);
}
