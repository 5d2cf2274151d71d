/*
 * A TLS 1.3 peer on GnuTLS (not ours, not OpenSSL) for the interop test (src/test/tls-gnutls-interop.test.ts):
 * one connection, client or server, mutual certificates, then the gateway's header exchange (8 bytes each way)
 * and BYTES of data each way at once (a non-blocking poll loop), sending a KeyUpdate every KU_EVERY bytes (with
 * update_requested when KU_REQ is 1), then close_notify; it reads until the addon's close_notify.
 * Prints one JSON line: the negotiated cipher, bytes and sha256 each way, KeyUpdates sent and received (a
 * handshake hook sees each, with its request byte). Any failure or the deadline: a message on stderr, exit 1.
 * Compiled at test time by src/testkit/gnutls-peer.ts (cc ... $(pkg-config --cflags --libs gnutls)).
 *
 * usage: gnutls-peer client|server PORT CA CERT KEY PRIORITY BYTES KU_EVERY KU_REQ HOLD DEADLINE_MS
 *   server with PORT 0: listens on 127.0.0.1, prints "PORT <n>" and accepts one connection.
 *   HOLD 1: the last chunk waits until BYTES have arrived, so a KeyUpdate the addon asks for while it sends is
 *   always answered (GnuTLS answers before its next record; with nothing left to send it never would).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 16384

static long long deadline_ms;
static unsigned ku_in, ku_out, ku_in_req, ku_out_req;

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "gnutls-peer: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

static void check(int rc, const char *what) { if (rc < 0) die("%s: %s", what, gnutls_strerror(rc)); }

static void left_or_die(const char *what) { if (now_ms() > deadline_ms) die("deadline passed while %s", what); }

/* every KeyUpdate in either direction, before GnuTLS acts on it (msg is its one-byte body) */
static int ku_hook(gnutls_session_t s, unsigned htype, unsigned when, unsigned incoming, const gnutls_datum_t *msg) {
  (void)s; (void)when;
  if (htype != GNUTLS_HANDSHAKE_KEY_UPDATE) return 0;
  int req = msg && msg->size == 1 && msg->data[0] == 1;
  if (incoming) { ku_in++; ku_in_req += req; } else { ku_out++; ku_out_req += req; }
  return 0;
}

static int connect_or_accept(const char *role, int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) die("socket: %s", strerror(errno));
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((unsigned short)port) };
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (strcmp(role, "client") == 0) {
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) die("connect to port %d: %s", port, strerror(errno));
    return fd;
  }
  socklen_t n = sizeof a;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 1) != 0) die("listen: %s", strerror(errno));
  if (getsockname(fd, (struct sockaddr *)&a, &n) != 0) die("getsockname: %s", strerror(errno));
  printf("PORT %d\n", ntohs(a.sin_port));
  fflush(stdout);
  struct pollfd p = { .fd = fd, .events = POLLIN };
  int left = (int)(deadline_ms - now_ms());
  if (left <= 0 || poll(&p, 1, left) != 1) die("no connection before the deadline");
  int c = accept(fd, NULL, NULL);
  if (c < 0) die("accept: %s", strerror(errno));
  close(fd);
  return c;
}

static gnutls_session_t session_new(const char *role, int fd, char **argv, gnutls_certificate_credentials_t *cred) {
  gnutls_session_t s;
  int server = strcmp(role, "server") == 0;
  check(gnutls_certificate_allocate_credentials(cred), "credentials");
  check(gnutls_certificate_set_x509_trust_file(*cred, argv[3], GNUTLS_X509_FMT_PEM), "CA file");
  check(gnutls_certificate_set_x509_key_file(*cred, argv[4], argv[5], GNUTLS_X509_FMT_PEM), "certificate and key");
  check(gnutls_init(&s, (server ? GNUTLS_SERVER : GNUTLS_CLIENT) | GNUTLS_NONBLOCK), "gnutls_init");
  const char *err = NULL;
  if (gnutls_priority_set_direct(s, argv[6], &err) < 0) die("priority string '%s' refused at '%s'", argv[6], err ? err : "?");
  check(gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, *cred), "credentials_set");
  if (server) gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUIRE);
  gnutls_session_set_verify_cert(s, NULL, 0); /* chain to the CA; the gateway's identity is a URI SAN, no host name */
  gnutls_handshake_set_hook_function(s, GNUTLS_HANDSHAKE_KEY_UPDATE, GNUTLS_HOOK_PRE, ku_hook);
  gnutls_transport_set_int(s, fd);
  return s;
}

static void wait_fd(int fd, short events, const char *what) {
  left_or_die(what);
  struct pollfd p = { .fd = fd, .events = events };
  int left = (int)(deadline_ms - now_ms());
  poll(&p, 1, left > 100 ? 100 : (left > 0 ? left : 0));
}

static void handshake(gnutls_session_t s, int fd) {
  int rc;
  while ((rc = gnutls_handshake(s)) < 0) {
    if (gnutls_error_is_fatal(rc)) die("handshake: %s", gnutls_strerror(rc));
    wait_fd(fd, gnutls_record_get_direction(s) ? POLLOUT : POLLIN, "in the handshake");
  }
  if (gnutls_protocol_get_version(s) != GNUTLS_TLS1_3) die("not TLS 1.3");
}

/* the gateway's header frames: the client sends 8 bytes first, the server answers with 8 */
static void header_send(gnutls_session_t s, int fd, const char *hdr) {
  ssize_t rc;
  while ((rc = gnutls_record_send(s, hdr, 8)) < 0) {
    if (rc != GNUTLS_E_AGAIN && rc != GNUTLS_E_INTERRUPTED) die("send header: %s", gnutls_strerror((int)rc));
    wait_fd(fd, POLLOUT, "sending the header");
  }
  if (rc != 8) die("header sent short: %zd", rc);
}

static void header_recv(gnutls_session_t s, int fd) {
  char h[8];
  size_t got = 0;
  while (got < 8) {
    ssize_t rc = gnutls_record_recv(s, h + got, 8 - got);
    if (rc > 0) { got += (size_t)rc; continue; }
    if (rc == 0) die("connection closed in the header exchange");
    if (rc != GNUTLS_E_AGAIN && rc != GNUTLS_E_INTERRUPTED) die("read header: %s", gnutls_strerror((int)rc));
    wait_fd(fd, POLLIN, "reading the header");
  }
}

struct flow {
  unsigned long long total, sent, recvd, records_in, next_ku, ku_every;
  unsigned ku_flags, ku_initiated;
  int ku_pending, bye_done, eof, hold;
  gnutls_hash_hd_t hs, hr;
  unsigned char out[CHUNK], in[CHUNK];
  unsigned long long rng;
};

/* the bytes to send: xorshift64 from a fixed seed, so every run sends the same stream */
static void fill(struct flow *f) {
  for (size_t i = 0; i < CHUNK; i += 8) {
    f->rng ^= f->rng << 13; f->rng ^= f->rng >> 7; f->rng ^= f->rng << 17;
    memcpy(f->out + i, &f->rng, 8);
  }
}

static int holding(const struct flow *f) {
  return f->hold && !f->ku_pending && f->sent < f->total && f->total - f->sent <= CHUNK && f->recvd < f->total;
}

/* one step of sending: a due KeyUpdate, else the next chunk (retried as is after EAGAIN), else close_notify */
static void send_step(gnutls_session_t s, struct flow *f) {
  int rc;
  if (f->ku_pending || (f->ku_every && f->sent >= f->next_ku && f->sent < f->total)) {
    if (!f->ku_pending) { f->ku_pending = 1; f->next_ku += f->ku_every; }
    rc = gnutls_session_key_update(s, f->ku_flags);
    if (rc == GNUTLS_E_AGAIN || rc == GNUTLS_E_INTERRUPTED) return;
    check(rc, "gnutls_session_key_update");
    f->ku_pending = 0;
    f->ku_initiated++;
    return;
  }
  if (f->sent < f->total) {
    if (holding(f)) return;
    size_t n = f->total - f->sent < CHUNK ? (size_t)(f->total - f->sent) : CHUNK;
    ssize_t w = gnutls_record_send(s, f->out, n);
    if (w == GNUTLS_E_AGAIN || w == GNUTLS_E_INTERRUPTED) return;
    if (w < 0) die("record_send after %llu bytes: %s", f->sent, gnutls_strerror((int)w));
    if ((size_t)w != n) die("record_send took %zd of %zu", w, n); /* GnuTLS takes whole records */
    gnutls_hash(f->hs, f->out, (size_t)w);
    f->sent += (unsigned long long)w;
    fill(f);
    return;
  }
  if (!f->bye_done) {
    rc = gnutls_bye(s, GNUTLS_SHUT_WR);
    if (rc == GNUTLS_E_AGAIN || rc == GNUTLS_E_INTERRUPTED) return;
    check(rc, "gnutls_bye");
    f->bye_done = 1;
  }
}

static void recv_step(gnutls_session_t s, struct flow *f) {
  ssize_t r = gnutls_record_recv(s, f->in, sizeof f->in);
  if (r > 0) { gnutls_hash(f->hr, f->in, (size_t)r); f->recvd += (unsigned long long)r; f->records_in++; return; }
  if (r == 0) { f->eof = 1; return; }
  if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) return;
  die("record_recv after %llu bytes: %s", f->recvd, gnutls_strerror((int)r));
}

static void hex(const unsigned char *d, char *out) { for (int i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", d[i]); }

static void relay(gnutls_session_t s, int fd, struct flow *f) {
  while (!(f->bye_done && f->eof)) {
    left_or_die(f->eof ? "sending" : f->bye_done ? "waiting for the peer's data and close_notify" : "relaying");
    if (!f->bye_done) send_step(s, f);
    if (!f->eof) recv_step(s, f);
    if (f->eof && f->bye_done) break;
    if (gnutls_record_check_pending(s) > 0) continue;
    short ev = (short)(f->eof ? 0 : POLLIN);
    if (!f->bye_done && !holding(f)) ev |= POLLOUT;
    struct pollfd p = { .fd = fd, .events = ev };
    poll(&p, 1, 100);
  }
}

int main(int argc, char **argv) {
  if (argc != 12) die("usage: gnutls-peer client|server PORT CA CERT KEY PRIORITY BYTES KU_EVERY KU_REQ HOLD DEADLINE_MS");
  deadline_ms = now_ms() + atoll(argv[11]);
  check(gnutls_global_init(), "gnutls_global_init");
  int fd = connect_or_accept(argv[1], atoi(argv[2]));
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  gnutls_certificate_credentials_t cred;
  gnutls_session_t s = session_new(argv[1], fd, argv, &cred);
  handshake(s, fd);
  if (strcmp(argv[1], "client") == 0) { header_send(s, fd, "OPENOPEN"); header_recv(s, fd); }
  else { header_recv(s, fd); header_send(s, fd, "REPLYREP"); }
  static struct flow f;
  f.total = strtoull(argv[7], NULL, 10);
  f.ku_every = strtoull(argv[8], NULL, 10);
  f.next_ku = f.ku_every;
  f.ku_flags = atoi(argv[9]) ? GNUTLS_KU_PEER : 0;
  f.hold = atoi(argv[10]);
  f.rng = 0x9e3779b97f4a7c15ULL;
  fill(&f);
  check(gnutls_hash_init(&f.hs, GNUTLS_DIG_SHA256), "hash");
  check(gnutls_hash_init(&f.hr, GNUTLS_DIG_SHA256), "hash");
  relay(s, fd, &f);
  unsigned char ds[32], dr[32];
  char hs[65], hr[65];
  gnutls_hash_deinit(f.hs, ds);
  gnutls_hash_deinit(f.hr, dr);
  hex(ds, hs);
  hex(dr, hr);
  printf("{\"cipher\":\"%s\",\"sent\":%llu,\"sentSha256\":\"%s\",\"received\":%llu,\"receivedSha256\":\"%s\",\"recordsReceived\":%llu,"
         "\"kuInitiated\":%u,\"kuSent\":%u,\"kuSentRequested\":%u,\"kuReceived\":%u,\"kuReceivedRequested\":%u}\n",
         gnutls_cipher_get_name(gnutls_cipher_get(s)), f.sent, hs, f.recvd, hr, f.records_in, f.ku_initiated, ku_out, ku_out_req,
         ku_in, ku_in_req);
  fflush(stdout);
  gnutls_deinit(s);
  gnutls_certificate_free_credentials(cred);
  close(fd);
  gnutls_global_deinit();
  return 0;
}
