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
#include <node_api.h>
#include "relaybio.h"
#include "splice.h"
#include "tls13relay.h"
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF_SZ (256 * 1024)
#define MAX_URIS 8

enum { T_EOF = 0, T_RESET, T_IDLE, T_CANCEL, T_ERROR };
static const char *t_reason_names[] = {"eof", "reset", "idle", "cancel", "error"};

typedef struct tlsr tlsr_t;
typedef struct { tlsr_t *t; int phase; } tlsr_msg_t;
struct tlsr {
  SSL *ssl;
  int fd;      /* TLS socket */
  int pfd;     /* plaintext socket (phase 2) */
  int is_server;
  int64_t deadline;
  unsigned char *first;
  size_t first_len;
  size_t header_max;
  /* phase 1 results */
  int ok;
  char error[256];
  char *uris[MAX_URIS];
  int nuris;
  unsigned char *frame; /* header_max bytes, phase 1 only (freed once JS has copied it) */
  size_t frame_len;
  /* phase 2 command */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int have_cmd, cancelled, finished;
  unsigned char *reply;
  size_t reply_len;
  int idle_ms;
  int efd;
  /* results */
  uint64_t bytes[2]; /* [0] tls -> plain, [1] plain -> tls */
  int reason, side, err;
  int handshook;
  char *expect_uri; /* client: the exact identity the server must present */
  /* our own record layer after the header frames (tls13relay.c): the application traffic secrets as OpenSSL's
   * keylog callback gives them ([0] client, [1] server), and the records OpenSSL has read [0] and written [1]
   * since the handshake (its message callback), which are the sequence numbers the relay continues from */
  int own_records, key_update_request;
  uint64_t key_update_records;
  unsigned char secret[2][TLS13_SECRET_MAX];
  size_t secret_len[2];
  int counting;
  uint64_t recs[2];
  /* authenticated splice (see splice_phase2) */
  int splice_ok;    /* tlsStart flag: no read-ahead, keep the tunnel header for the binding */
  int splice;       /* tlsContinue: switch to the kernel splice after the binding exchange */
  int64_t hs_ms;    /* handshakeTimeoutMs: also bounds the binding exchange */
  unsigned char *hdr_open, *hdr_reply; /* the OPEN and REPLY frames exactly as sent/received */
  size_t hdr_open_len, hdr_reply_len;
  napi_threadsafe_function tsfn;
  int refs;
};

/* sessions whose OpenSSL state is still allocated (tlsLive): it is freed when the thread ends, not by GC */
static int live_sessions;
/* native memory V8 is told about: the struct while its handle lives, and the session while it runs */
#define LIVE_COST ((int64_t)(4 * BUF_SZ + 96 * 1024))

static void free_phase1(tlsr_t *t) {
  free(t->frame);
  t->frame = NULL;
  for (int i = 0; i < t->nuris; i++) free(t->uris[i]);
  t->nuris = 0;
}

/* SO_LINGER {1, 0}: close() sends RST instead of FIN */
static void arm_reset(int fd) {
  if (fd < 0) return;
  struct linger l = {1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void tlsr_unref(tlsr_t *t) {
  if (__atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    if (t->ssl) SSL_free(t->ssl);
    OPENSSL_cleanse(t->secret, sizeof t->secret);
    free_phase1(t);
    free(t->first);
    free(t->reply);
    free(t->expect_uri);
    free(t->hdr_open);
    free(t->hdr_reply);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t);
  }
}

static void ssl_errstr(tlsr_t *t, const char *what) {
  unsigned long e = ERR_get_error();
  char buf[200] = "";
  if (e) ERR_error_string_n(e, buf, sizeof buf);
  else if (errno) snprintf(buf, sizeof buf, "%s", strerror(errno));
  else snprintf(buf, sizeof buf, "connection closed");
  snprintf(t->error, sizeof t->error, "%s: %s", what, buf);
  ERR_clear_error();
}

/* OpenSSL's keylog callback: keep the two application traffic secrets (generation 0) of this session */
static void keylog_cb(const SSL *ssl, const char *line) {
  tlsr_t *t = SSL_get_ex_data(ssl, 0);
  int i = strncmp(line, "CLIENT_TRAFFIC_SECRET_0 ", 24) == 0 ? 0 : strncmp(line, "SERVER_TRAFFIC_SECRET_0 ", 24) == 0 ? 1 : -1;
  const char *hex = strrchr(line, ' ');
  if (!t || i < 0 || !hex) return;
  size_t n = strlen(++hex) / 2;
  if (n > TLS13_SECRET_MAX) return;
  for (size_t k = 0; k < n; k++) {
    unsigned int v;
    if (sscanf(hex + 2 * k, "%2x", &v) != 1) return;
    t->secret[i][k] = (unsigned char)v;
  }
  t->secret_len[i] = n;
}

/* OpenSSL's message callback: count the records read and written since the handshake (one header each) */
static void msg_cb(int write_p, int version, int content_type, const void *buf, size_t len, SSL *ssl, void *arg) {
  tlsr_t *t = SSL_get_ex_data(ssl, 0);
  if (t && t->counting && content_type == SSL3_RT_HEADER) t->recs[write_p ? 1 : 0]++;
}

/* wait for fd events or the cancel eventfd, bounded by the deadline; returns 1 ready, 0 timeout, -1 cancel */
static int wait_fd(tlsr_t *t, int fd, short ev, int64_t deadline) {
  for (;;) {
    int64_t left = deadline - mono_ms();
    if (left <= 0) return 0;
    struct pollfd p[2] = {{fd, ev, 0}, {t->efd, POLLIN, 0}};
    int n = poll(p, 2, (int)(left > 1000000 ? 1000000 : left));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return 0;
    if (p[1].revents) return -1;
    if (n > 0) return 1;
  }
}

/* run an SSL operation until done: returns >0 done, 0 failed (error set) */
#define SSL_RETRY(t, expr, what)                                            \
  for (;;) {                                                                \
    ERR_clear_error();                                                      \
    int _r = (expr);                                                        \
    if (_r > 0) { rc = _r; break; }                                         \
    int _e = SSL_get_error((t)->ssl, _r);                                   \
    short _ev = _e == SSL_ERROR_WANT_READ ? POLLIN : _e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0; \
    if (!_ev) { ssl_errstr((t), (what)); rc = 0; break; }                   \
    int _w = wait_fd((t), (t)->fd, _ev, (t)->deadline);                     \
    if (_w <= 0) { snprintf((t)->error, sizeof (t)->error, "%s: %s", (what), _w == 0 ? "timed out" : "cancelled"); rc = 0; break; } \
  }

/* Every URI SAN of the peer certificate, as an array (never joined into text). A URI that is not printable
 * ASCII, and any URI beyond MAX_URIS, is recorded as "": it still counts, and it never names anyone. */
static void add_uri(tlsr_t *t, const unsigned char *d, int len) {
  if (t->nuris >= MAX_URIS) return;
  int ok = len > 0 && len <= 1024;
  for (int i = 0; ok && i < len; i++) ok = d[i] >= 0x20 && d[i] <= 0x7e;
  char *s = malloc(ok ? (size_t)len + 1 : 1);
  if (!s) return;
  if (ok) memcpy(s, d, (size_t)len);
  s[ok ? len : 0] = 0;
  t->uris[t->nuris++] = s;
}

static void collect_uris(tlsr_t *t) {
  X509 *peer = SSL_get1_peer_certificate(t->ssl);
  if (!peer) return;
  int crit = 0;
  GENERAL_NAMES *names = X509_get_ext_d2i(peer, NID_subject_alt_name, &crit, NULL);
  if (!names && crit == -2) add_uri(t, NULL, 0), add_uri(t, NULL, 0); /* two SAN extensions: names no one */
  if (names) {
    int n = sk_GENERAL_NAME_num(names), seen = 0;
    for (int i = 0; i < n; i++) {
      GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
      if (g->type != GEN_URI) continue;
      if (++seen > MAX_URIS - 1) { add_uri(t, NULL, 0); break; } /* too many: one "" marker is enough */
      add_uri(t, ASN1_STRING_get0_data(g->d.uniformResourceIdentifier), ASN1_STRING_length(g->d.uniformResourceIdentifier));
    }
    GENERAL_NAMES_free(names);
  }
  X509_free(peer);
}

static void phase1(tlsr_t *t) {
  int rc = 0;
  SSL_RETRY(t, SSL_do_handshake(t->ssl), "TLS handshake");
  if (!rc) return;
  t->counting = 1; /* every record from here on is under the application traffic keys */
  if (SSL_get_verify_result(t->ssl) != X509_V_OK) { snprintf(t->error, sizeof t->error, "peer certificate not verified"); return; }
  /* handshook is set once the identity is acceptable; JS still re-checks the URIs */
  collect_uris(t);
  /* the origin knows exactly whom it dials: exactly one URI SAN, byte-for-byte that identity */
  if (t->expect_uri && (t->nuris != 1 || strcmp(t->uris[0], t->expect_uri) != 0)) {
    snprintf(t->error, sizeof t->error, "peer certificate does not name exactly %s", t->expect_uri);
    return;
  }
  t->handshook = 1;
  size_t off = 0;
  while (off < t->first_len) {
    SSL_RETRY(t, SSL_write(t->ssl, t->first + off, (int)(t->first_len - off)), "write header");
    if (!rc) return;
    off += (size_t)rc;
  }
  if (t->splice_ok) { t->hdr_open = t->first; t->hdr_open_len = t->first_len; } /* the origin's OPEN */
  else free(t->first);
  t->first = NULL;
  t->first_len = 0;
  /* one frame: 8 bytes, then the body if the frame fits in header_max */
  t->frame = malloc(t->header_max);
  if (!t->frame) { snprintf(t->error, sizeof t->error, "out of memory"); return; }
  size_t need = 8;
  while (t->frame_len < need) {
    SSL_RETRY(t, SSL_read(t->ssl, t->frame + t->frame_len, (int)(need - t->frame_len)), "read header");
    if (!rc) { if (t->frame_len > 0) { t->ok = 1; } return; } /* JS judges a truncated frame */
    t->frame_len += (size_t)rc;
    if (t->frame_len == 8 && need == 8) {
      size_t total = 8 + (((size_t)t->frame[6] << 8) | t->frame[7]);
      if (total <= t->header_max && memcmp(t->frame, "MMTP", 4) == 0) need = total;
    }
  }
  t->ok = 1;
  if (t->splice_ok) { /* the terminus' OPEN or the origin's REPLY, for the binding */
    unsigned char *c = malloc(t->frame_len);
    if (!c) { t->ok = 0; snprintf(t->error, sizeof t->error, "out of memory"); return; }
    memcpy(c, t->frame, t->frame_len);
    if (t->is_server) { t->hdr_open = c; t->hdr_open_len = t->frame_len; }
    else { t->hdr_reply = c; t->hdr_reply_len = t->frame_len; }
  }
}

static void fail2(tlsr_t *t, int side, int err) {
  t->reason = (err == ECONNRESET || err == EPIPE || err == ETIMEDOUT || err == ECONNABORTED || err == ENOTCONN) ? T_RESET : T_ERROR;
  t->side = side;
  t->err = err;
  /* side 0 = TLS socket failed -> reset the plaintext one, and vice versa (the thread's end resets both) */
  arm_reset(side == 0 ? t->pfd : t->fd);
}

/* ---------------------------------------------------------------- the TLS relay
 * One loop per session moves plaintext socket -> `up` -> SSL_write -> io.out -> TLS socket, and TLS socket
 * -> io.in -> SSL_read -> `down` -> plaintext socket. OpenSSL works on the buffer BIO of relaybio.c, never
 * on a socket: a recv(2) brings in up to TLS_IN_SZ bytes (many records) and a send(2) carries every record
 * that one SSL_write pass produced (up to 16), where a socket BIO costs one write(2) per 16 KiB record and,
 * without read-ahead, two read(2)s per record. Fewer and larger socket calls also mean fewer, larger
 * segments through the TCP stack. The price is one memcpy per record and direction (BIO <-> OpenSSL's own
 * record buffer), far cheaper than the syscalls it replaces. */
#define TLS_IN_SZ BUF_SZ
#define TLS_OUT_SZ (BUF_SZ + 32 * 1024) /* what one full `up` becomes: 16 records of 16384 + 22 bytes */
#define RECORD_MAX (16384 + 256 + 5)      /* the largest TLS 1.3 record a peer may send */

typedef struct {
  relay_bio_t io;
  unsigned char *up, *down;
  size_t ulen, uoff, dlen, doff;
  int p_eof, t_eof;              /* plaintext EOF read; close_notify read */
  int p_shut, t_shut;            /* FIN sent on the plaintext / TLS socket */
  int cn_queued;                 /* close_notify is in io.out; the TLS FIN follows once io.out is sent */
  int p_rd, p_wr, t_rd, t_wr;    /* the socket may be ready: 1 = try the call, 0 = wait for poll */
  int enc_wait;                  /* SSL_write/SSL_shutdown stopped on a full io.out: wait until it is sent */
  int dec_wait_in, dec_wait_out; /* SSL_read stopped: needs more of io.in / needs io.out sent */
} rs_t;

/* errno to report when OpenSSL fails on the TLS side: the recv(2) error behind it, else a reset (a stream cut
 * without close_notify, or records that do not decrypt, are a peer that died or an attack: never a clean end) */
static int rs_tls_err(rs_t *s) { return s->io.in_err ? s->io.in_err : ECONNRESET; }

/* OpenSSL failed and queued its alert (bad_record_mac, unexpected EOF...) in io.out: one try to send it, as a
 * socket BIO would have done at once, before the relay resets both sockets */
static void rs_send_alert(tlsr_t *t, rs_t *s) {
  iobuf_t *o = &s->io.out;
  if (o->off < o->len) { ssize_t n = send(t->fd, o->b + o->off, o->len - o->off, MSG_NOSIGNAL | MSG_DONTWAIT); (void)n; }
}

static int rs_plain_read(tlsr_t *t, rs_t *s) {
  if (s->p_eof || s->ulen != 0 || !s->p_rd) return 0;
  ssize_t n = read(t->pfd, s->up, BUF_SZ);
  if (n > 0) { s->ulen = (size_t)n; s->uoff = 0; return 1; }
  if (n == 0) { s->p_eof = 1; return 1; }
  if (errno == EAGAIN) s->p_rd = 0;
  else if (errno != EINTR) { fail2(t, 1, errno); return -1; }
  return 0;
}

/* up -> io.out as 16 KiB records; then, after plaintext EOF, close_notify */
static int rs_encrypt(tlsr_t *t, rs_t *s) {
  int progress = 0;
  while (s->uoff < s->ulen && !s->enc_wait) {
    size_t n = 0; /* the error queue is empty here (see relay): no ERR_clear_error per record */
    if (SSL_write_ex(t->ssl, s->up + s->uoff, s->ulen - s->uoff, &n) > 0) {
      s->uoff += n;
      __atomic_add_fetch(&t->bytes[1], (uint64_t)n, __ATOMIC_RELAXED);
      progress = 1;
      continue;
    }
    int e = SSL_get_error(t->ssl, 0);
    if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) { s->enc_wait = 1; break; }
    if (ERR_peek_error()) ssl_errstr(t, "TLS records");
    rs_send_alert(t, s);
    fail2(t, 0, ECONNRESET);
    return -1;
  }
  if (s->uoff == s->ulen) s->uoff = s->ulen = 0;
  if (s->p_eof && s->ulen == 0 && !s->cn_queued && !s->enc_wait) {
    ERR_clear_error();
    int r = SSL_shutdown(t->ssl); /* queues close_notify; 0 = the peer's not seen yet: fine */
    int e = r < 0 ? SSL_get_error(t->ssl, r) : SSL_ERROR_NONE;
    if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) s->enc_wait = 1;
    else { s->cn_queued = 1; progress = 1; } /* on any other error the FIN still follows, as it always did */
    ERR_clear_error(); /* keep the queue empty for the SSL_get_error calls that follow */
  }
  return progress;
}

/* io.out -> TLS socket; once close_notify has been sent, the FIN */
static int rs_send(tlsr_t *t, rs_t *s) {
  iobuf_t *o = &s->io.out;
  int progress = 0;
  while (o->off < o->len && s->t_wr) {
    ssize_t n = send(t->fd, o->b + o->off, o->len - o->off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) { o->off += (size_t)n; progress = 1; continue; }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) { s->t_wr = 0; break; }
    fail2(t, 0, n < 0 ? errno : EPIPE);
    return -1;
  }
  if (o->off == o->len) { o->off = o->len = 0; s->enc_wait = s->dec_wait_out = 0; }
  if (s->cn_queued && o->len == 0 && !s->t_shut) { shutdown(t->fd, SHUT_WR); s->t_shut = 1; progress = 1; }
  return progress;
}

/* TLS socket -> io.in. A failed recv(2) is kept as an end of stream with its errno: the records already
 * received are still decrypted and delivered first, and SSL_read then reports the cut. */
static int rs_recv(tlsr_t *t, rs_t *s) {
  iobuf_t *in = &s->io.in;
  if (s->io.in_eof || !s->t_rd || s->t_eof) return 0;
  if (in->off == in->len) in->off = in->len = 0;
  else if (in->cap - in->len < RECORD_MAX && in->off > 0) { /* at most a few records left: move them to the front */
    memmove(in->b, in->b + in->off, in->len - in->off);
    in->len -= in->off;
    in->off = 0;
  }
  if (in->len == in->cap) return 0; /* full: SSL_read first */
  ssize_t n = recv(t->fd, in->b + in->len, in->cap - in->len, MSG_DONTWAIT);
  if (n > 0) { in->len += (size_t)n; s->dec_wait_in = 0; return 1; }
  if (n == 0) { s->io.in_eof = 1; s->dec_wait_in = 0; return 1; }
  if (errno == EAGAIN) { s->t_rd = 0; return 0; }
  if (errno == EINTR) return 0;
  s->io.in_eof = 1;
  s->io.in_err = errno;
  s->dec_wait_in = 0;
  return 1;
}

/* io.in -> down: decrypt every whole record there (or until down is full) */
static int rs_decrypt(tlsr_t *t, rs_t *s) {
  int progress = 0;
  if (s->t_eof || s->doff != 0 || s->dec_wait_in || s->dec_wait_out) return 0;
  while (s->dlen < BUF_SZ) {
    size_t n = 0;
    if (SSL_read_ex(t->ssl, s->down + s->dlen, BUF_SZ - s->dlen, &n) > 0) { s->dlen += n; progress = 1; continue; }
    int e = SSL_get_error(t->ssl, 0);
    if (e == SSL_ERROR_WANT_READ) s->dec_wait_in = 1;
    else if (e == SSL_ERROR_WANT_WRITE) s->dec_wait_out = 1; /* a post-handshake reply waits for io.out room */
    else if (e == SSL_ERROR_ZERO_RETURN) { s->t_eof = 1; progress = 1; }
    else { /* EOF without close_notify: the peer died; or records that do not verify */
      if (ERR_peek_error()) ssl_errstr(t, "TLS records");
      rs_send_alert(t, s);
      fail2(t, 0, rs_tls_err(s));
      return -1;
    }
    break;
  }
  return progress;
}

static int rs_plain_write(tlsr_t *t, rs_t *s) {
  int progress = 0;
  if (s->doff < s->dlen && s->p_wr) {
    ssize_t n = write(t->pfd, s->down + s->doff, s->dlen - s->doff);
    if (n > 0) {
      s->doff += (size_t)n;
      __atomic_add_fetch(&t->bytes[0], (uint64_t)n, __ATOMIC_RELAXED);
      if (s->doff == s->dlen) s->doff = s->dlen = 0;
      progress = 1;
    } else if (n < 0 && errno == EAGAIN) s->p_wr = 0;
    else if (n < 0 && errno != EINTR) { fail2(t, 1, errno); return -1; }
  }
  if (s->t_eof && s->dlen == 0 && !s->p_shut) { shutdown(t->pfd, SHUT_WR); s->p_shut = 1; progress = 1; }
  return progress;
}

/* nothing moved: wait for a socket, the cancel eventfd or the idle limit; -1 when the relay must end */
static int rs_wait(tlsr_t *t, rs_t *s, int64_t last, int64_t now) {
  short pev = 0, tev = 0;
  if (!s->p_eof && s->ulen == 0 && !s->p_rd) pev |= POLLIN;
  if (s->doff < s->dlen && !s->p_wr) pev |= POLLOUT;
  if (!s->io.in_eof && !s->t_eof && !s->t_rd && s->io.in.len - s->io.in.off < s->io.in.cap) tev |= POLLIN;
  if (s->io.out.off < s->io.out.len && !s->t_wr) tev |= POLLOUT;
  /* a socket with nothing to wait for is still polled (events 0) until it is done, to see an RST at once */
  struct pollfd p[3] = {{pev || !s->p_shut ? t->pfd : -1, pev, 0}, {tev || !(s->t_eof && s->t_shut) ? t->fd : -1, tev, 0}, {t->efd, POLLIN, 0}};
  int timeout = -1;
  if (t->idle_ms > 0) {
    int64_t left = last + t->idle_ms - now;
    if (left <= 0) { t->reason = T_IDLE; return -1; }
    timeout = (int)(left > 1000000 ? 1000000 : left);
  }
  int n = poll(p, 3, timeout);
  if (n < 0 && errno == EINTR) return 0;
  if (n < 0) { t->reason = T_ERROR; t->err = errno; t->side = -1; return -1; }
  if (p[2].revents) { t->reason = T_CANCEL; return -1; }
  for (int i = 0; i < 2; i++) {
    if (!(p[i].revents & POLLERR)) continue;
    int se = 0;
    socklen_t sl = sizeof se;
    getsockopt(p[i].fd, SOL_SOCKET, SO_ERROR, &se, &sl);
    fail2(t, i == 0 ? 1 : 0, se ? se : ECONNRESET);
    return -1;
  }
  if (p[0].revents & (POLLIN | POLLHUP)) s->p_rd = 1;
  if (p[0].revents & (POLLOUT | POLLHUP)) s->p_wr = 1;
  if (p[1].revents) s->t_rd = s->t_wr = 1; /* retry both TLS socket calls */
  return 0;
}

static void relay_loop(tlsr_t *t, rs_t *s) {
  int64_t last = mono_ms();
  for (;;) {
    int r, progress = 0;
    if ((r = rs_plain_read(t, s)) < 0) return;
    progress |= r;
    if ((r = rs_encrypt(t, s)) < 0) return;
    progress |= r;
    if ((r = rs_send(t, s)) < 0) return;
    progress |= r;
    if ((r = rs_recv(t, s)) < 0) return;
    progress |= r;
    if ((r = rs_decrypt(t, s)) < 0) return;
    progress |= r;
    if ((r = rs_plain_write(t, s)) < 0) return;
    progress |= r;
    if (s->p_shut && s->t_shut) { t->reason = T_EOF; return; }
    int64_t now = mono_ms();
    if (progress) { last = now; continue; }
    if (rs_wait(t, s, last, now) < 0) return;
  }
}

/* process totals (tlsRecordStats): sessions relayed on our own records, on OpenSSL's; KeyUpdates received and sent
 * by origins (TLS clients), then by termini (TLS servers) */
#define RECORD_STATS 6
static uint64_t record_stats[RECORD_STATS];

/* Relay on our own TLS 1.3 records (tls13relay.c) from the record OpenSSL would have read or written next. 0 when
 * this session cannot (MMPROXY_TLS_RECORDS=openssl, a suite we do not run, no secrets): OpenSSL relays then. */
static int relay_own(tlsr_t *t) {
  uint16_t suite = (uint16_t)(SSL_CIPHER_get_id(SSL_get_current_cipher(t->ssl)) & 0xffff);
  if (!t->own_records || !tls13_suite_supported(suite) || !t->secret_len[0] || t->secret_len[0] != t->secret_len[1]) return 0;
  tls13_relay_t r;
  memset(&r, 0, sizeof r);
  size_t avail = (size_t)SSL_pending(t->ssl), got = 0;
  unsigned char *pend = avail ? malloc(avail) : NULL; /* the rest of a record OpenSSL has opened, not yet read */
  int w = t->is_server ? 1 : 0; /* a client writes with the client secret and reads the server's */
  int ok = (!avail || (pend && SSL_read_ex(t->ssl, pend, avail, &got) == 1 && got == avail)) && !SSL_has_pending(t->ssl) &&
           tls13_dir_init(&r.wr, suite, t->secret[w], t->secret_len[w], t->recs[1], 1) &&
           tls13_dir_init(&r.rd, suite, t->secret[!w], t->secret_len[!w], t->recs[0], 0);
  OPENSSL_cleanse(t->secret, sizeof t->secret);
  if (!ok) {
    tls13_dir_clear(&r.wr);
    tls13_dir_clear(&r.rd);
    free(pend);
    snprintf(t->error, sizeof t->error, "TLS records: cannot take over from OpenSSL");
    t->reason = T_ERROR; t->side = -1;
    return 1;
  }
  r.fd = t->fd; r.pfd = t->pfd; r.efd = t->efd; r.idle_ms = t->idle_ms;
  r.pending = pend; r.pending_len = got;
  r.peer_closed = (SSL_get_shutdown(t->ssl) & SSL_RECEIVED_SHUTDOWN) != 0;
  r.key_update_records = t->key_update_records;
  r.key_update_request = t->key_update_request;
  r.bytes = t->bytes;
  tls13_relay_run(&r);
  if (pend) { OPENSSL_cleanse(pend, got); free(pend); }
  t->reason = r.reason; t->side = r.side; t->err = r.err;
  if (r.error) snprintf(t->error, sizeof t->error, "%s", r.error);
  __atomic_add_fetch(&record_stats[0], 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&record_stats[t->is_server ? 4 : 2], r.key_updates[0], __ATOMIC_RELAXED);
  __atomic_add_fetch(&record_stats[t->is_server ? 5 : 3], r.key_updates[1], __ATOMIC_RELAXED);
  return 1;
}

static void relay(tlsr_t *t) {
  if (relay_own(t)) return;
  __atomic_add_fetch(&record_stats[1], 1, __ATOMIC_RELAXED);
  rs_t s;
  memset(&s, 0, sizeof s);
  s.p_rd = s.p_wr = s.t_rd = s.t_wr = 1;
  s.up = malloc(BUF_SZ);
  s.down = malloc(BUF_SZ);
  s.io.in.b = malloc(TLS_IN_SZ);
  s.io.out.b = malloc(TLS_OUT_SZ);
  s.io.in.cap = TLS_IN_SZ;
  s.io.out.cap = TLS_OUT_SZ;
  BIO *bio = s.up && s.down && s.io.in.b && s.io.out.b ? relay_bio_new(&s.io) : NULL;
  t->reason = -1;
  if (!bio) { t->reason = T_ERROR; t->err = ENOMEM; t->side = -1; }
  else {
    /* the handshake and the header frames are done and sent; OpenSSL keeps any partly read record */
    BIO_up_ref(bio);
    SSL_set0_rbio(t->ssl, bio);
    SSL_set0_wbio(t->ssl, bio);
    /* SSL_get_error needs an empty error queue before each call it judges. Only failures queue errors, and every
     * failure but SSL_shutdown's ends the relay, so one clear here (and one after SSL_shutdown) is enough: a clear
     * per record costs a thread-local lookup each time (about 1% of the relay's CPU). */
    ERR_clear_error();
    relay_loop(t, &s);
    relay_bio_detach(bio); /* SSL_free comes later: by then the BIO must not point at this frame */
  }
  free(s.up);
  free(s.down);
  free(s.io.in.b);
  free(s.io.out.b);
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
  if (!bind_value(t, peer_is_origin, want)) { ssl_errstr(t, "binding: exporter"); return 0; }
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
  if (!bind_value(t, origin, v)) { ssl_errstr(t, "binding: exporter"); return 0; }
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

/* Phase 2 of an authenticated-splice session. Terminus: REPLY + its BIND, then check the origin's BIND.
 * Origin (REPLY already read in phase 1): check the terminus' BIND, then send its own. Then splice. */
static void splice_phase2(tlsr_t *t) {
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
  if (!ok) { t->reason = T_ERROR; t->side = 0; return; }
  splice_io_t io;
  memset(&io, 0, sizeof io);
  io.fd[0] = t->fd; /* direction 0 = tunnel -> plaintext, as t->bytes[0] */
  io.fd[1] = t->pfd;
  io.efd = t->efd;
  io.idle_ms = t->idle_ms;
  io.bytes = t->bytes;
  io.side = -1;
  int e = splice_io_pipes(&io);
  if (e) { t->reason = T_ERROR; t->err = e; t->side = -1; snprintf(t->error, sizeof t->error, "pipe: %s", strerror(e)); return; }
  /* Without TLS around the payload, a FIN cannot say whether the peer finished or died. So the tunnel socket
   * lingers {1, 0} while spliced: if this process dies, its kernel closes the socket with an RST, never a FIN.
   * A clean half-close is shutdown(SHUT_WR), a FIN whatever the linger; after a clean end linger is cleared,
   * so the final close() still delivers what is queued. */
  arm_reset(t->fd);
  splice_run(&io);
  if (io.reason == R_EOF) { struct linger off = {0, 0}; setsockopt(t->fd, SOL_SOCKET, SO_LINGER, &off, sizeof off); }
  t->reason = io.reason; /* R_* and T_* name the same ends */
  t->side = io.side;
  t->err = io.err;
}

static void *tlsr_thread(void *arg) {
  tlsr_t *t = arg;
  phase1(t);
  tlsr_msg_t *m1 = malloc(sizeof *m1);
  if (m1) { m1->t = t; m1->phase = 1; napi_call_threadsafe_function(t->tsfn, m1, napi_tsfn_blocking); }
  /* wait for the command (or cancel) */
  pthread_mutex_lock(&t->mu);
  while (!t->have_cmd && !t->cancelled) pthread_cond_wait(&t->cv, &t->mu);
  int cancelled = t->cancelled;
  pthread_mutex_unlock(&t->mu);
  t->reason = T_CANCEL;
  if (!cancelled && t->splice && t->pfd >= 0) {
    t->deadline = mono_ms() + t->hs_ms;
    splice_phase2(t);
  } else if (!cancelled) {
    t->deadline = mono_ms() + 10000;
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
  /* A forced end (reset, error, idle, cancel, drain) is a reset on both sockets, every time: a cut stream
   * must never look complete. JS closes the sockets; SO_LINGER makes that close an RST. */
  if (t->reason != T_EOF) { arm_reset(t->fd); arm_reset(t->pfd); }
  /* free OpenSSL state now, not when V8 collects the handle: a flood must not pile up session memory */
  SSL_free(t->ssl);
  t->ssl = NULL;
  free(t->first);
  t->first = NULL;
  free(t->reply);
  t->reply = NULL;
  __atomic_sub_fetch(&live_sessions, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_lock(&t->mu);
  t->finished = 1;
  close(t->efd);
  t->efd = -1;
  pthread_mutex_unlock(&t->mu);
  tlsr_msg_t *m2 = malloc(sizeof *m2);
  if (m2) { m2->t = t; m2->phase = 2; napi_call_threadsafe_function(t->tsfn, m2, napi_tsfn_blocking); }
  else tlsr_unref(t);
  napi_release_threadsafe_function(t->tsfn, napi_tsfn_release);
  return NULL;
}

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
  if (phase == 1) free_phase1(t); /* the thread no longer touches them; JS has its copies */
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
  SSL_CTX *ctx = SSL_CTX_new(TLS_method());
  if (!ctx) return throw_msg(env, "SSL_CTX_new");
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
  SSL_CTX_set_security_level(ctx, 2); /* RSA/DH >= 2048 bits, ECC >= 224, anywhere in either chain */
  /* AES-128-GCM first: 10 AES rounds instead of 14, same GHASH and tag (both ends are ours, so this is the suite
   * every tunnel uses); the other TLS 1.3 suites stay allowed. MMPROXY_TLS_CIPHERSUITES overrides the list
   * (benchmarks compare suites with it). */
  SSL_CTX_set_ciphersuites(ctx, getenv("MMPROXY_TLS_CIPHERSUITES") ? getenv("MMPROXY_TLS_CIPHERSUITES")
                                : "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256");
  X509_STORE *store = SSL_CTX_get_cert_store(ctx);
  BIO *b = BIO_new_mem_buf(ca, (int)nca);
  int nc = 0;
  X509 *x;
  while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) { X509_STORE_add_cert(store, x); X509_free(x); nc++; }
  BIO_free(b);
  ERR_clear_error();
  if (nc == 0) { SSL_CTX_free(ctx); return throw_msg(env, "tlsContext: no CA certificate in caPem"); }
  b = BIO_new_mem_buf(cert, (int)ncert);
  x = PEM_read_bio_X509(b, NULL, NULL, NULL);
  if (!x || SSL_CTX_use_certificate(ctx, x) != 1) { if (x) X509_free(x); BIO_free(b); SSL_CTX_free(ctx); return throw_msg(env, "tlsContext: bad certificate"); }
  X509_free(x);
  while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) SSL_CTX_add_extra_chain_cert(ctx, x); /* ctx owns x */
  BIO_free(b);
  ERR_clear_error();
  b = BIO_new_mem_buf(key, (int)nkey);
  EVP_PKEY *pk = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
  BIO_free(b);
  if (!pk || SSL_CTX_use_PrivateKey(ctx, pk) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
    if (pk) EVP_PKEY_free(pk);
    SSL_CTX_free(ctx);
    return throw_msg(env, "tlsContext: bad private key");
  }
  EVP_PKEY_free(pk);
  SSL_CTX_set_keylog_callback(ctx, keylog_cb);
  mm_ctx_t *c = calloc(1, sizeof *c);
  if (!c) { SSL_CTX_free(ctx); return throw_msg(env, "out of memory"); }
  c->ctx = ctx;
  const char *rec = getenv("MMPROXY_TLS_RECORDS"), *ku = getenv("MMPROXY_TLS_KEY_UPDATE_RECORDS");
  c->own_records = !(rec && strcmp(rec, "openssl") == 0);
  c->key_update_records = ku ? strtoull(ku, NULL, 10) : 0;
  c->key_update_request = getenv("MMPROXY_TLS_KEY_UPDATE_REQUEST") && strcmp(getenv("MMPROXY_TLS_KEY_UPDATE_REQUEST"), "1") == 0;
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
  t->deadline = mono_ms() + (int64_t)deadline_ms;
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
  if (t->efd < 0 || !t->ssl || SSL_set_fd(t->ssl, fd) != 1 || SSL_set_ex_data(t->ssl, 0, t) != 1) {
    if (t->efd >= 0) close(t->efd);
    t->refs = 1; tlsr_unref(t);
    return throw_msg(env, "tlsStart: setup failed");
  }
  /* No read-ahead, on every session. With it, OpenSSL 3.0 reads as much as its buffer holds and then, before each
   * record, memmoves the unread rest to the front of the buffer: 23% of the relay's user CPU in a profile of the
   * mTLS chain (16% in ssl3_get_record alone), against 8% for all copies without it (one read(2) for the record
   * header, one for the record). And a splice-capable session must stop reading at an exact record boundary. */
  SSL_set_read_ahead(t->ssl, 0);
  SSL_set_msg_callback(t->ssl, msg_cb);
  if (is_server) SSL_set_accept_state(t->ssl); else SSL_set_connect_state(t->ssl);
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
  __atomic_add_fetch(&live_sessions, 1, __ATOMIC_ACQ_REL);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 512 * 1024);
  pthread_t th;
  int rc = pthread_create(&th, &attr, tlsr_thread, t);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    napi_release_threadsafe_function(t->tsfn, napi_tsfn_abort);
    close(t->efd);
    __atomic_sub_fetch(&live_sessions, 1, __ATOMIC_ACQ_REL);
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
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  tlsr_t *t = argc >= 4 ? get_t(env, argv[0]) : NULL;
  bool splice = false;
  if (argc >= 5) napi_get_value_bool(env, argv[4], &splice);
  int32_t pfd = -1, idle = 0;
  if (!t || napi_get_value_int32(env, argv[2], &pfd) != napi_ok || napi_get_value_int32(env, argv[3], &idle) != napi_ok) {
    napi_throw_type_error(env, NULL, "tlsContinue(handle, replyOrNull, relayFd, idleMs, splice?)");
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
    t->have_cmd = 1;
    pthread_cond_signal(&t->cv);
  }
  pthread_mutex_unlock(&t->mu);
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

/* tlsLive() -> number of sessions whose OpenSSL state is still allocated (0 once every thread has ended) */
static napi_value TlsLive(napi_env env, napi_callback_info info) {
  napi_value v;
  napi_create_int32(env, __atomic_load_n(&live_sessions, __ATOMIC_ACQUIRE), &v);
  return v;
}

/* tlsRecordStats() -> [sessions on our records, on OpenSSL's, KeyUpdates received by origins, sent by origins,
 * received by termini, sent by termini] */
static napi_value TlsRecordStats(napi_env env, napi_callback_info info) {
  napi_value arr, v;
  napi_create_array_with_length(env, RECORD_STATS, &arr);
  for (uint32_t i = 0; i < RECORD_STATS; i++) {
    napi_create_double(env, (double)__atomic_load_n(&record_stats[i], __ATOMIC_RELAXED), &v);
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
      {"tlsRecordStats", NULL, TlsRecordStats, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
}
