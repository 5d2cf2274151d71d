/* The mTLS relay on OpenSSL's own records (see tlsr.h): MMPROXY_TLS_RECORDS=openssl (the benchmark's comparison
 * row), or a session whose suite tls13rec.c does not run. One way: tlshandover.c calls tlsr_relay_openssl (and
 * counts the session in tlsr_record_stats); nothing here calls back into tlshandover.c. */
#define _GNU_SOURCE
#include "tlsr.h"
#include "relaybio.h"
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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
  int dec_fail;                  /* the TLS stream was cut: this errno once the records before the cut are delivered */
  int salvaging;                 /* a socket failed: what it had sent is being moved on (rs_salvage); no close_notify */
} rs_t;

static int rs_sock_failed(tlsr_t *t, rs_t *s, int side, int err);

/* a socket failed: side 0 = TLS socket failed -> reset the plaintext one, and vice versa (the thread's end resets both) */
static void tlsr_fail(tlsr_t *t, int side, int err) {
  t->reason = (err == ECONNRESET || err == EPIPE || err == ETIMEDOUT || err == ECONNABORTED || err == ENOTCONN) ? T_RESET : T_ERROR;
  t->side = side;
  t->err = err;
  mm_arm_reset(side == 0 ? t->pfd : t->fd);
}

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
  else if (errno != EINTR) { tlsr_fail(t, 1, errno); return -1; }
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
    if (ERR_peek_error()) tlsr_errstr(t, "TLS records");
    rs_send_alert(t, s);
    tlsr_fail(t, 0, ECONNRESET);
    return -1;
  }
  if (s->uoff == s->ulen) s->uoff = s->ulen = 0;
  if (s->p_eof && s->ulen == 0 && !s->cn_queued && !s->enc_wait && !s->salvaging) {
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
    return rs_sock_failed(t, s, 0, n < 0 ? errno : EPIPE);
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
  if (s->dec_fail) { /* the cut, once what was opened before it is delivered */
    if (s->dlen > 0) return 0;
    rs_send_alert(t, s);
    tlsr_fail(t, 0, s->dec_fail);
    return -1;
  }
  if (s->t_eof || s->doff != 0 || s->dec_wait_in || s->dec_wait_out) return 0;
  while (s->dlen < BUF_SZ) {
    size_t n = 0;
    if (SSL_read_ex(t->ssl, s->down + s->dlen, BUF_SZ - s->dlen, &n) > 0) { s->dlen += n; progress = 1; continue; }
    int e = SSL_get_error(t->ssl, 0);
    if (e == SSL_ERROR_WANT_READ) s->dec_wait_in = 1;
    else if (e == SSL_ERROR_WANT_WRITE) s->dec_wait_out = 1; /* a post-handshake reply waits for io.out room */
    else if (e == SSL_ERROR_ZERO_RETURN) { s->t_eof = 1; progress = 1; }
    else { /* EOF without close_notify: the peer died; or records that do not verify */
      if (ERR_peek_error()) tlsr_errstr(t, "TLS records");
      /* a cut stream (recv(2) ended): the whole records before it were opened into `down` in this call, deliver them first */
      if (s->io.in_eof && s->dlen > 0) { s->dec_fail = rs_tls_err(s); return 1; }
      rs_send_alert(t, s);
      tlsr_fail(t, 0, rs_tls_err(s));
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
    else if (n < 0 && errno != EINTR) return rs_sock_failed(t, s, 1, errno);
  }
  if (s->t_eof && s->dlen == 0 && !s->p_shut) { shutdown(t->pfd, SHUT_WR); s->p_shut = 1; progress = 1; }
  return progress;
}

/* After a socket failed (`side` 1 = plaintext, 0 = TLS; its error already read), the salvage rule of ioready.h,
 * as tls13relay.c's salvage applies it (see there): the plaintext's last bytes encrypted and sent with no
 * close_notify, the TLS socket's whole records decrypted and delivered, then sent by the kernel before the reset,
 * while the receiver takes them (bounded: ioready.h). -1 when a second failure (or the cut, once delivered) ended it. */
static int rs_salvage(tlsr_t *t, rs_t *s, int side) {
  mm_salvage_t sv;
  mm_salvage_begin(&sv);
  int to = side == 1 ? t->fd : t->pfd, rc = 0;
  if (side == 1) s->p_rd = s->t_wr = 1; else s->t_rd = s->p_wr = 1;
  while (mm_now_ms() < mm_salvage_deadline(&sv)) {
    int progress = 0;
    if (side == 1) {
      if ((rc = rs_plain_read(t, s)) < 0 || (progress |= rc, rc = rs_encrypt(t, s)) < 0 || (progress |= rc, rc = rs_send(t, s)) < 0) break;
    } else {
      if ((rc = rs_recv(t, s)) < 0 || (progress |= rc, rc = rs_decrypt(t, s)) < 0 || (progress |= rc, rc = rs_plain_write(t, s)) < 0) break;
    }
    if ((progress |= rc)) { mm_salvage_moved(&sv); continue; }
    int blocked = side == 1 ? s->io.out.off < s->io.out.len && !s->t_wr : s->doff < s->dlen && !s->p_wr;
    if (!blocked || !mm_wait_writable(to, mm_salvage_deadline(&sv))) break;
    if (side == 1) s->t_wr = 1; else s->p_wr = 1;
  }
  mm_wait_sent(to, &sv); /* the reset that follows must not discard what was salvaged */
  return rc < 0 ? -1 : 0;
}

/* socket `side` failed with `err`: what it had sent is salvaged (once), then the relay fails with that error */
static int rs_sock_failed(tlsr_t *t, rs_t *s, int side, int err) {
  if (!s->salvaging) {
    s->salvaging = 1;
    if (rs_salvage(t, s, side) < 0) return -1;
  }
  tlsr_fail(t, side, err);
  return -1;
}

/* nothing moved: wait for a socket, the cancel eventfd or the idle limit; -1 when the relay must end */
static int rs_wait(tlsr_t *t, rs_t *s, int64_t last) {
  short pev = 0, tev = 0;
  if (!s->p_eof && s->ulen == 0 && !s->p_rd) pev |= POLLIN;
  if (s->doff < s->dlen && !s->p_wr) pev |= POLLOUT;
  if (!s->io.in_eof && !s->t_eof && !s->t_rd && s->io.in.len - s->io.in.off < s->io.in.cap) tev |= POLLIN;
  if (s->io.out.off < s->io.out.len && !s->t_wr) tev |= POLLOUT;
  /* a socket with nothing to wait for is still polled (events 0) until it is done, to see an RST at once */
  struct pollfd p[2] = {{pev || !s->p_shut ? t->pfd : -1, pev, 0}, {tev || !(s->t_eof && s->t_shut) ? t->fd : -1, tev, 0}};
  int idx = 0, err = 0;
  switch (mm_wait(p, t->efd, t->idle_ms > 0 ? last + t->idle_ms : -1, &idx, &err)) {
  case MM_TIMEOUT: t->reason = T_IDLE; return -1;
  case MM_CANCEL: t->reason = T_CANCEL; return -1;
  case MM_POLLFAIL: t->reason = T_ERROR; t->err = err; t->side = -1; return -1;
  case MM_SOCKERR: return rs_sock_failed(t, s, idx == 0 ? 1 : 0, err);
  }
  if (p[0].revents & (POLLIN | POLLHUP)) s->p_rd = 1;
  if (p[0].revents & (POLLOUT | POLLHUP)) s->p_wr = 1;
  if (p[1].revents) s->t_rd = s->t_wr = 1; /* retry both TLS socket calls */
  return 0;
}

static void relay_loop(tlsr_t *t, rs_t *s) {
  int64_t last = mm_now_ms();
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
    int64_t now = mm_now_ms();
    if (progress) { last = now; continue; }
    if (rs_wait(t, s, last) < 0) return;
  }
}


void tlsr_relay_openssl(tlsr_t *t) {
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
  if (s.up) OPENSSL_clear_free(s.up, BUF_SZ);   /* plaintext: wiped, as OpenSSL wipes its own (CLEANSE_PLAINTEXT) */
  if (s.down) OPENSSL_clear_free(s.down, BUF_SZ);
  free(s.io.in.b);
  free(s.io.out.b);
}
