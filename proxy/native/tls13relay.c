/* The mTLS relay on our own TLS 1.3 records (see tls13relay.h).
 *
 * plaintext socket -> readv(2) straight into the record slots of `ob` (a 5-byte gap for each header, room for the
 * type byte and the tag after each 16 KiB) -> sealed in place -> one send(2) of up to 32 records (512 KiB of payload).
 * TLS socket -> recv(2) into `ib` (many records) -> each whole record opened in place -> one writev(2) of the
 * plaintext of up to 64 records, straight from `ib`.
 * So a payload byte is copied by the kernel into user space and back out on each side, and nowhere else: OpenSSL's
 * record layer added two user-space copies per byte on each side (into its write buffer, out of its read buffer).
 *
 * Ends, as the OpenSSL relay in tlsrelay.c: plaintext EOF -> close_notify, then FIN on the TLS socket; the peer's
 * close_notify -> FIN on the plaintext socket once its data is delivered; a TLS stream that ends without
 * close_notify, a record that does not verify (tampered, replayed, reordered, truncated) and any alert but
 * close_notify are resets: a cut stream never looks complete. KeyUpdate (RFC 8446 section 7.2) is received, and
 * sent after `key_update_records` records with one key and in answer to a peer's update_requested. */
#define _GNU_SOURCE
#include "tls13relay.h"
#include "splice.h"
#include "ioready.h"
#include <openssl/crypto.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define NREC 32                                            /* records per readv(2) from the plaintext side */
#define CTRL_ROOM 64                                       /* a KeyUpdate before the records, an alert after them */
#define OUT_CAP (CTRL_ROOM + NREC * TLS13_FULL_RECORD + CTRL_ROOM)
#define IN_CAP (512 * 1024 + TLS13_MAX_RECORD)
#define MAXIOV 64                                          /* records per writev(2) to the plaintext side */

typedef struct {
  tls13_relay_t *r;
  /* plaintext -> TLS: ob[ooff, olen) are sealed records not yet sent */
  unsigned char *ob;
  size_t ooff, olen;
  int p_eof, cn_queued, t_shut, p_rd, t_wr;
  int ku_wanted; /* the peer asked for our KeyUpdate: it goes before our next record */
  /* TLS -> plaintext: ib[ioff, ilen) not yet opened; iov[iovi, niov) opened, not yet delivered (inside ib) */
  unsigned char *ib;
  size_t ioff, ilen;
  struct iovec iov[MAXIOV];
  int niov, iovi;
  int in_eof, in_err, t_eof, p_shut, t_rd, p_wr;
  /* the peer's handshake message being reassembled (a KeyUpdate may span records) */
  unsigned char hs[5];
  size_t hslen;
  /* what a peer may send without data (see spend): records in a row with no payload, KeyUpdates it may still
   * send unasked, payload records toward the next one, whether we asked for one it has not sent yet */
  unsigned empty_run, ku_free, ku_earn;
  int ku_asked;
  int salvaging; /* a socket failed: what it had sent is being moved on (salvage), no second salvage */
} rl_t;

#define MAX_EMPTY_RUN 32   /* records without payload in a row (empty records, KeyUpdates, warnings): as OpenSSL */
#define KU_FREE_START 8    /* unasked KeyUpdates a peer may send before any data ... */
#define KU_EARN_RECORDS 16 /* ... and one more per this many payload records (at most KU_FREE_MAX banked) */
#define KU_FREE_MAX 64

static int fail(rl_t *s, int side, int err, const char *why) {
  tls13_relay_t *r = s->r;
  r->reason = mm_is_reset_errno(err) ? R_RESET : R_ERROR;
  r->side = side;
  r->err = err;
  r->error = why;
  return -1;
}

static int sock_failed(rl_t *s, int side, int err);

/* seal a control record (alert, KeyUpdate) at the end of ob */
static int queue_ctrl(rl_t *s, unsigned char type, const unsigned char *body, size_t n) {
  if (s->olen + TLS13_HDR + n + 1 + TLS13_TAG > OUT_CAP) return fail(s, -1, ENOBUFS, "no room for a TLS control record");
  memcpy(s->ob + s->olen + TLS13_HDR, body, n);
  size_t len = tls13_seal(&s->r->wr, s->ob + s->olen, n, type);
  if (!len) return fail(s, -1, EIO, "TLS record: seal failed");
  s->olen += len;
  return 1;
}

/* the peer's records are bad: one try to send a fatal alert (as OpenSSL would), then a reset */
static int bad_record(rl_t *s, int alert, const char *why) {
  unsigned char a[2] = {2, (unsigned char)alert};
  if (!s->cn_queued && queue_ctrl(s, TLS13_CT_ALERT, a, 2) > 0) {
    ssize_t n = send(s->r->fd, s->ob + s->ooff, s->olen - s->ooff, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)n;
  }
  return fail(s, 0, ECONNRESET, why);
}

/* our KeyUpdate, sealed with the old key; every record after it uses the new one */
static int key_update(rl_t *s) {
  /* An answer never asks back. Our own update asks for the peer's only when told to: an OpenSSL 3.0 relay (an older
   * gateway, or MMPROXY_TLS_RECORDS=openssl) that must answer while one of its own writes is pending fails the
   * tunnel with "bad length" (SSL_read writes the answer, and SSL_write's retry rules forbid that), and the peer's
   * keys are its own business: it counts its records as we count ours. */
  unsigned char ku[5] = {24, 0, 0, 1, !s->ku_wanted && s->r->key_update_request ? 1 : 0};
  if (queue_ctrl(s, TLS13_CT_HANDSHAKE, ku, sizeof ku) < 0) return -1;
  if (ku[4]) s->ku_asked = 1;
  if (!tls13_dir_update(&s->r->wr)) return fail(s, -1, EIO, "TLS KeyUpdate: key derivation failed");
  s->ku_wanted = 0;
  s->r->key_updates[1]++;
  return 1;
}

/* plaintext -> sealed records in ob (only when ob is empty, so the records are contiguous) */
static int fill(rl_t *s) {
  tls13_relay_t *r = s->r;
  if (s->p_eof || s->olen != 0 || !s->p_rd || s->cn_queued) return 0;
  uint64_t limit = r->key_update_records ? r->key_update_records : TLS13_KEY_UPDATE_DEFAULT;
  if (limit < 2 * NREC) limit = 2 * NREC;
  if ((s->ku_wanted || r->wr.seq + NREC >= limit) && key_update(s) < 0) return -1;
  size_t base = s->olen;
  struct iovec v[NREC];
  for (int k = 0; k < NREC; k++) {
    v[k].iov_base = s->ob + base + (size_t)k * TLS13_FULL_RECORD + TLS13_HDR;
    v[k].iov_len = TLS13_MAX_PLAIN;
  }
  ssize_t n = readv(r->pfd, v, NREC);
  if (n == 0) s->p_eof = 1;
  if (n < 0 && errno == EINTR) return 1; /* try again at once */
  if (n < 0 && errno == EAGAIN) s->p_rd = 0;
  else if (n < 0) return fail(s, 1, errno, NULL);
  if (n <= 0) return n == 0 || s->olen > 0;
  size_t left = (size_t)n, at = base;
  while (left > 0) { /* every record but the last is full, so record k starts exactly at its slot */
    size_t m = left < TLS13_MAX_PLAIN ? left : TLS13_MAX_PLAIN;
    size_t len = tls13_seal(&r->wr, s->ob + at, m, TLS13_CT_APP);
    if (!len) return fail(s, -1, EIO, "TLS record: seal failed");
    at += len;
    left -= m;
  }
  s->olen = at;
  __atomic_add_fetch(&r->bytes[1], (uint64_t)n, __ATOMIC_RELAXED);
  return 1;
}

static int close_notify(rl_t *s) {
  static const unsigned char cn[2] = {1, TLS13_A_CLOSE_NOTIFY};
  if (!s->p_eof || s->cn_queued || s->olen != 0) return 0;
  if (queue_ctrl(s, TLS13_CT_ALERT, cn, 2) < 0) return -1;
  s->cn_queued = 1;
  return 1;
}

/* ob -> TLS socket; once close_notify is sent, the FIN */
static int send_out(rl_t *s) {
  int progress = 0;
  while (s->ooff < s->olen && s->t_wr) {
    ssize_t n = send(s->r->fd, s->ob + s->ooff, s->olen - s->ooff, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) { s->ooff += (size_t)n; progress = 1; continue; }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) { s->t_wr = 0; break; }
    return sock_failed(s, 0, n < 0 ? errno : EPIPE);
  }
  if (s->ooff == s->olen) s->ooff = s->olen = 0;
  if (s->cn_queued && s->olen == 0 && !s->t_shut) { shutdown(s->r->fd, SHUT_WR); s->t_shut = 1; progress = 1; }
  return progress;
}

/* room in ib for a recv(2): at the end, or at the front once nothing waiting for delivery points into ib */
static int in_room(const rl_t *s) { return s->ilen < IN_CAP || (s->niov == 0 && s->ioff > 0); }

/* TLS socket -> ib. A failed recv(2) is an end of stream with its errno: whole records already received are
 * still opened and delivered first. */
static int recv_in(rl_t *s) {
  if (s->in_eof || s->t_eof || !s->t_rd) return 0;
  if (s->niov == 0 && s->ioff > 0 && (s->ioff == s->ilen || IN_CAP - s->ilen < TLS13_MAX_RECORD)) {
    memmove(s->ib, s->ib + s->ioff, s->ilen - s->ioff); /* at most one partial record */
    s->ilen -= s->ioff;
    s->ioff = 0;
  }
  if (s->ilen == IN_CAP) return 0;
  ssize_t n = recv(s->r->fd, s->ib + s->ilen, IN_CAP - s->ilen, MSG_DONTWAIT);
  if (n > 0) { s->ilen += (size_t)n; return 1; }
  if (n < 0 && errno == EAGAIN) { s->t_rd = 0; return 0; }
  if (n < 0 && errno == EINTR) return 1;
  s->in_eof = 1;
  s->in_err = n < 0 ? errno : 0;
  return 1;
}

/* an alert from the peer: close_notify ends its direction, user_canceled is only a warning, all else is fatal */
static int peer_alert(rl_t *s, const unsigned char *b, size_t n) {
  if (n != 2) return bad_record(s, TLS13_A_DECODE, "TLS alert of the wrong length");
  if (b[1] == TLS13_A_CLOSE_NOTIFY) { s->t_eof = 1; return 1; }
  if (b[1] == 90) return 1;
  return fail(s, 0, ECONNRESET, "the peer sent a TLS alert");
}

/* A handshake message after the handshake: only KeyUpdate is expected (no tickets, no auth requests). It may be
 * split over records (RFC 8446 section 5.1), and must end at a record boundary: the key changes after it. Alerts as
 * section 4.6.3 and 6 ask: another message type is unexpected_message, a body that is not one byte decode_error,
 * a request byte other than 0 or 1 illegal_parameter. */
static int peer_handshake(rl_t *s, const unsigned char *b, size_t n) {
  if (n == 0) return bad_record(s, TLS13_A_UNEXPECTED, "empty TLS handshake record");
  while (n > 0) {
    s->hs[s->hslen++] = *b++;
    n--;
    if (s->hslen == 1 && s->hs[0] != 24) return bad_record(s, TLS13_A_UNEXPECTED, "unexpected TLS handshake message after the handshake");
    if (s->hslen == 4 && (s->hs[1] != 0 || s->hs[2] != 0 || s->hs[3] != 1)) return bad_record(s, TLS13_A_DECODE, "TLS KeyUpdate of the wrong length");
    if (s->hslen < 5) continue;
    if (s->hs[4] > 1) return bad_record(s, TLS13_A_ILLEGAL, "TLS KeyUpdate with a bad request");
    if (n > 0) return bad_record(s, TLS13_A_UNEXPECTED, "TLS record continues after a KeyUpdate");
    s->hslen = 0;
    if (s->ku_asked) s->ku_asked = 0;
    else if (s->ku_free > 0) s->ku_free--;
    else return bad_record(s, TLS13_A_UNEXPECTED, "too many TLS KeyUpdates for the data sent");
    if (!tls13_dir_update(&s->r->rd)) return fail(s, -1, EIO, "TLS KeyUpdate: key derivation failed");
    s->r->key_updates[0]++;
    if (s->hs[4] == 1 && !s->cn_queued) s->ku_wanted = 1;
  }
  return 1;
}

/* what an opened record costs the peer: a payload record earns KeyUpdates; one without payload extends the run */
static int spend(rl_t *s, unsigned char type, size_t n) {
  if (type == TLS13_CT_APP && n > 0) {
    s->empty_run = 0;
    if (++s->ku_earn >= KU_EARN_RECORDS) { s->ku_earn = 0; if (s->ku_free < KU_FREE_MAX) s->ku_free++; }
    return 1;
  }
  if (++s->empty_run > MAX_EMPTY_RUN) return bad_record(s, TLS13_A_UNEXPECTED, "too many TLS records without data");
  return 1;
}

/* open every whole record in ib (up to MAXIOV of payload) in place */
static int open_in(rl_t *s) {
  int progress = 0;
  while (!s->t_eof && s->niov < MAXIOV && s->ilen - s->ioff >= TLS13_HDR) {
    unsigned char *rec = s->ib + s->ioff, type = 0;
    int alert = 0;
    size_t len = tls13_record_len(rec, &alert), n = 0;
    if (!len) return bad_record(s, alert, "not a TLS 1.3 protected record");
    if (s->ilen - s->ioff < len) break;
    if ((alert = tls13_open(&s->r->rd, rec, &n, &type)) != 0) return bad_record(s, alert, "a TLS record did not verify");
    s->ioff += len;
    progress = 1;
    if (s->hslen > 0 && type != TLS13_CT_HANDSHAKE) return bad_record(s, TLS13_A_UNEXPECTED, "TLS record inside a split handshake message");
    if (spend(s, type, n) < 0) return -1;
    if (type == TLS13_CT_APP && n > 0) {
      s->iov[s->niov].iov_base = rec + TLS13_HDR;
      s->iov[s->niov].iov_len = n;
      s->niov++;
    } else if (type == TLS13_CT_ALERT) {
      if (peer_alert(s, rec + TLS13_HDR, n) < 0) return -1;
    } else if (type == TLS13_CT_HANDSHAKE) {
      if (peer_handshake(s, rec + TLS13_HDR, n) < 0) return -1;
    } else if (type != TLS13_CT_APP) return bad_record(s, TLS13_A_UNEXPECTED, "unexpected TLS content type");
  }
  return progress;
}

/* opened payload -> plaintext socket; after the peer's close_notify and the last byte, the FIN */
static int deliver(rl_t *s) {
  int progress = 0;
  if (s->iovi < s->niov && s->p_wr) {
    ssize_t n = writev(s->r->pfd, s->iov + s->iovi, s->niov - s->iovi);
    if (n > 0) {
      __atomic_add_fetch(&s->r->bytes[0], (uint64_t)n, __ATOMIC_RELAXED);
      for (size_t left = (size_t)n; left > 0;) {
        struct iovec *v = &s->iov[s->iovi];
        if (left < v->iov_len) { v->iov_base = (unsigned char *)v->iov_base + left; v->iov_len -= left; break; }
        left -= v->iov_len;
        s->iovi++;
      }
      if (s->iovi == s->niov) {
        s->niov = s->iovi = 0;
        if (s->ioff == s->ilen) s->ioff = s->ilen = 0;
      }
      progress = 1;
    } else if (n < 0 && errno == EAGAIN) s->p_wr = 0;
    else if (n < 0 && errno == EINTR) progress = 1;
    else if (n < 0) return sock_failed(s, 1, errno);
  }
  if (s->t_eof && s->niov == 0 && !s->p_shut) { shutdown(s->r->pfd, SHUT_WR); s->p_shut = 1; progress = 1; }
  return progress;
}

/* the TLS stream ended without close_notify and everything whole has been delivered: the peer died (or a
 * record was cut): a reset, never a clean end */
static int cut(rl_t *s) {
  if (!s->in_eof || s->t_eof || s->niov != 0) return 0;
  int alert = 0;
  size_t have = s->ilen - s->ioff;
  if (have >= TLS13_HDR && tls13_record_len(s->ib + s->ioff, &alert) <= have) return 0; /* open_in has work */
  return fail(s, 0, s->in_err ? s->in_err : ECONNRESET, have ? "the TLS stream ended inside a record" : NULL);
}

/* After a socket failed (`side` 1 = plaintext, 0 = TLS, as fail() names them; its error already read, by poll's
 * SO_ERROR or by the failed call), the salvage rule of ioready.h: what it had sent before the error goes on to the
 * other socket and the kernel is let send it before the reset, while the receiver takes them (bounded: ioready.h). The plaintext's last bytes
 * are sealed and sent, with no close_notify (the stream was cut: the reset follows them); the TLS socket's whole
 * records are opened and delivered (a record the reset cut is not). Without this, a destination's last bytes and
 * its RST arriving in one wake-up were dropped (busy iperf3 answers with one byte and an RST:
 * proxy/src/test/security-resets-answers.test.ts), as splice.c's splice_salvage_step does for the splice. The
 * other direction is not moved any more: the relay is ending. -1 when a second failure ended the salvage. */
static int salvage(rl_t *s, int side) {
  tls13_relay_t *r = s->r;
  mm_salvage_t sv;
  mm_salvage_begin(&sv);
  int to = side == 1 ? r->fd : r->pfd, rc = 0;
  if (side == 1) s->p_rd = s->t_wr = 1; else s->t_rd = s->p_wr = 1;
  while (mm_now_ms() < mm_salvage_deadline(&sv)) {
    int progress = 0;
    if (side == 1) { /* plaintext bytes -> sealed records -> the TLS socket */
      if ((rc = fill(s)) < 0 || (progress |= rc, rc = send_out(s)) < 0) break;
    } else { /* TLS records -> opened -> the plaintext socket */
      if ((rc = recv_in(s)) < 0 || (progress |= rc, rc = open_in(s)) < 0 || (progress |= rc, rc = deliver(s)) < 0) break;
    }
    if ((progress |= rc)) { mm_salvage_moved(&sv); continue; }
    int blocked = side == 1 ? s->ooff < s->olen && !s->t_wr : s->iovi < s->niov && !s->p_wr;
    if (!blocked || !mm_wait_writable(to, mm_salvage_deadline(&sv))) break;
    if (side == 1) s->t_wr = 1; else s->p_wr = 1;
  }
  mm_wait_sent(to, &sv); /* the reset that follows must not discard what was salvaged */
  return rc < 0 ? -1 : 0;
}

/* socket `side` failed with `err`: what it had sent is salvaged (once), then the relay fails with that error */
static int sock_failed(rl_t *s, int side, int err) {
  if (!s->salvaging) {
    s->salvaging = 1;
    if (salvage(s, side) < 0) return -1;
  }
  return fail(s, side, err, NULL);
}

/* nothing moved: wait for a socket, the cancel eventfd or the idle limit; -1 when the relay must end */
static int wait_io(rl_t *s, int64_t last) {
  tls13_relay_t *r = s->r;
  short pev = 0, tev = 0;
  if (!s->p_eof && !s->cn_queued && s->olen == 0 && !s->p_rd) pev |= POLLIN;
  if (s->iovi < s->niov && !s->p_wr) pev |= POLLOUT;
  if (!s->in_eof && !s->t_eof && !s->t_rd && in_room(s)) tev |= POLLIN;
  if (s->ooff < s->olen && !s->t_wr) tev |= POLLOUT;
  /* a socket with nothing to wait for is still polled (events 0) until it is done, to see an RST at once */
  struct pollfd p[2] = {{pev || !s->p_shut ? r->pfd : -1, pev, 0}, {tev || !(s->t_eof && s->t_shut) ? r->fd : -1, tev, 0}};
  int idx = 0, err = 0;
  switch (mm_wait(p, r->efd, r->idle_ms > 0 ? last + r->idle_ms : -1, &idx, &err)) {
  case MM_TIMEOUT: r->reason = R_IDLE; return -1;
  case MM_CANCEL: r->reason = R_CANCEL; return -1;
  case MM_POLLFAIL: return fail(s, -1, err, NULL);
  case MM_SOCKERR: return sock_failed(s, idx == 0 ? 1 : 0, err);
  }
  if (p[0].revents & (POLLIN | POLLHUP)) s->p_rd = 1;
  if (p[0].revents & (POLLOUT | POLLHUP)) s->p_wr = 1;
  if (p[1].revents) s->t_rd = s->t_wr = 1; /* retry both TLS socket calls */
  return 0;
}

#define STEP(call)                    \
  if ((rc = (call)) < 0) return;      \
  progress |= rc;

static void loop(rl_t *s) {
  int64_t last = mm_now_ms();
  for (;;) {
    int rc, progress = 0;
    STEP(fill(s));
    STEP(close_notify(s));
    STEP(send_out(s));
    STEP(recv_in(s));
    STEP(open_in(s));
    STEP(deliver(s));
    if (cut(s) < 0) return;
    if (s->p_shut && s->t_shut) { s->r->reason = R_EOF; return; }
    int64_t now = mm_now_ms();
    if (progress) { last = now; continue; }
    if (wait_io(s, last) < 0) return;
  }
}

void tls13_relay_run(tls13_relay_t *r) {
  rl_t s;
  memset(&s, 0, sizeof s);
  s.r = r;
  s.p_rd = s.p_wr = s.t_rd = s.t_wr = 1;
  s.t_eof = r->peer_closed;
  s.ku_wanted = r->key_update_owed;
  s.ku_free = KU_FREE_START;
  r->reason = -1;
  r->side = -1;
  s.ob = malloc(OUT_CAP);
  s.ib = malloc(IN_CAP);
  if (!s.ob || !s.ib) fail(&s, -1, ENOMEM, NULL);
  else {
    if (r->pending_len) { /* what OpenSSL had already opened goes first */
      s.iov[0].iov_base = (void *)r->pending;
      s.iov[0].iov_len = r->pending_len;
      s.niov = 1;
    }
    loop(&s);
  }
  if (r->reason != R_EOF) { mm_arm_reset(r->fd); mm_arm_reset(r->pfd); }
  if (s.ob) OPENSSL_clear_free(s.ob, OUT_CAP); /* plaintext read, and plaintext opened in place: wiped */
  if (s.ib) OPENSSL_clear_free(s.ib, IN_CAP);
  tls13_dir_clear(&r->rd);
  tls13_dir_clear(&r->wr);
}
