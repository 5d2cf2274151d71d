/*
 * Unit checks of two addon parts that no socket-level test can isolate (src/test/native-units.test.ts compiles
 * this with native/ioready.c and native/tls13rec.c under AddressSanitizer + UBSan, and runs one case per call):
 * - tls13_open checks a record's header and length itself, before it touches the body (the relay checks first
 *   too, so only a direct call shows it: the records here are allocated to their exact size, so a read past
 *   what the header allows is an ASan report); a failed open wipes what it decrypted;
 * - mm_wait, the one readiness wait of every relay loop: timeout, ready, the cancel eventfd first, POLLERR
 *   reported with SO_ERROR and which socket, events 0 meaning errors only, EINTR retried to the deadline.
 * usage: native-units CASE    prints "ok CASE" and exits 0, or names what failed and exits 1
 */
#define _GNU_SOURCE
#include "ioready.h"
#include "tls13rec.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static const char *which;
#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "FAIL %s (line %d): ", which, __LINE__); \
  fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } } while (0)

static void dirs(tls13_dir_t *enc, tls13_dir_t *dec) {
  unsigned char secret[32];
  memset(secret, 0x11, sizeof secret);
  CHECK(tls13_dir_init(enc, 0x1301, secret, 32, 0, 1) && tls13_dir_init(dec, 0x1301, secret, 32, 0, 0), "dir init");
}

/* a record of exactly `size` bytes with this header (the body, if any, zeros) */
static unsigned char *record(unsigned char type, size_t clen, size_t size) {
  unsigned char *r = calloc(1, size);
  r[0] = type; r[1] = 3; r[2] = 3; r[3] = (unsigned char)(clen >> 8); r[4] = (unsigned char)clen;
  return r;
}

static void open_checks_length(void) {
  tls13_dir_t enc, dec;
  dirs(&enc, &dec);
  size_t n = 0;
  unsigned char type = 0;
  /* headers that promise more than a record may hold, on 22-byte buffers: refused from the header alone */
  unsigned char *r = record(23, TLS13_MAX_CIPHER + 1, 22);
  CHECK(tls13_open(&dec, r, &n, &type) == TLS13_A_OVERFLOW, "ciphertext over 2^14+256: record_overflow");
  free(r);
  r = record(23, TLS13_MAX_CIPHER, 22); /* a legal ciphertext length, but 2^14+240 bytes of inner plaintext */
  CHECK(tls13_open(&dec, r, &n, &type) == TLS13_A_OVERFLOW, "inner plaintext over 2^14+1: record_overflow");
  free(r);
  r = record(22, 17, 22);
  CHECK(tls13_open(&dec, r, &n, &type) == TLS13_A_UNEXPECTED, "outer type handshake: unexpected_message");
  free(r);
  r = record(23, 16, 21);
  CHECK(tls13_open(&dec, r, &n, &type) == TLS13_A_BAD_MAC, "no room for the type byte: bad_record_mac");
  free(r);
  CHECK(dec.seq == 0, "no refused record advanced the sequence number (%llu)", (unsigned long long)dec.seq);
  tls13_dir_clear(&enc);
  tls13_dir_clear(&dec);
}

static void open_wipes_on_failure(void) {
  tls13_dir_t enc, dec;
  dirs(&enc, &dec);
  unsigned char *r = malloc(TLS13_HDR + 100 + 1 + TLS13_TAG);
  memset(r + TLS13_HDR, 'p', 100);
  size_t len = tls13_seal(&enc, r, 100, 23), n = 0;
  CHECK(len == TLS13_HDR + 100 + 1 + TLS13_TAG, "sealed length %zu", len);
  unsigned char type = 0, *copy = malloc(len);
  memcpy(copy, r, len);
  CHECK(tls13_open(&dec, r, &n, &type) == 0 && n == 100 && type == 23 && r[TLS13_HDR] == 'p', "round trip");
  CHECK(tls13_open(&dec, copy, &n, &type) == TLS13_A_BAD_MAC, "the same record again (replay): bad_record_mac");
  for (size_t i = TLS13_HDR; i < len - TLS13_TAG; i++) CHECK(copy[i] == 0, "byte %zu of a failed open not wiped", i);
  free(r);
  free(copy);
  tls13_dir_clear(&enc);
  tls13_dir_clear(&dec);
}

static void wait_cases(const char *c) {
  int sv[2], efd = eventfd(0, EFD_NONBLOCK), idx = -1, err = 0;
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 && efd >= 0, "socketpair/eventfd");
  struct pollfd p[2] = {{sv[0], POLLIN, 0}, {-1, 0, 0}};
  int64_t t0 = mm_now_ms();
  if (strcmp(c, "wait-timeout") == 0) {
    CHECK(mm_wait(p, efd, t0 + 50, &idx, &err) == MM_TIMEOUT && mm_now_ms() - t0 >= 50, "timeout after 50 ms");
  } else if (strcmp(c, "wait-ready") == 0) {
    CHECK(write(sv[1], "x", 1) == 1, "write");
    CHECK(mm_wait(p, efd, t0 + 5000, &idx, &err) == MM_READY && (p[0].revents & POLLIN), "readable");
  } else if (strcmp(c, "wait-cancel-first") == 0) {
    uint64_t one = 1;
    CHECK(write(sv[1], "x", 1) == 1 && write(efd, &one, sizeof one) == sizeof one, "write");
    CHECK(mm_wait(p, efd, t0 + 5000, &idx, &err) == MM_CANCEL, "the cancel eventfd wins over a readable socket");
  } else if (strcmp(c, "wait-errors-only") == 0) {
    p[0].events = 0;
    CHECK(write(sv[1], "x", 1) == 1, "write");
    CHECK(mm_wait(p, efd, t0 + 50, &idx, &err) == MM_TIMEOUT, "events 0: readable data is not an event");
  } else {
    CHECK(0, "unknown case %s", c);
  }
}

/* a TCP socket whose peer reset it: POLLERR, SO_ERROR ECONNRESET; polled in slot 1 with events 0 */
static void wait_sockerr(void) {
  int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0), efd = eventfd(0, 0), idx = -1, err = 0;
  struct sockaddr_in a = { .sin_family = AF_INET };
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 1) == 0 && getsockname(l, (struct sockaddr *)&a, &al) == 0, "listen");
  CHECK(connect(c, (struct sockaddr *)&a, sizeof a) == 0, "connect");
  int s = accept(l, NULL, NULL);
  mm_arm_reset(s);
  close(s); /* SO_LINGER {1, 0}: an RST */
  struct pollfd p[2] = {{-1, 0, 0}, {c, 0, 0}};
  int w = mm_wait(p, efd, mm_now_ms() + 5000, &idx, &err);
  CHECK(w == MM_SOCKERR && idx == 1 && err == ECONNRESET, "reset socket: got %d idx %d err %d", w, idx, err);
}

static void on_alarm(int sig) { (void)sig; }

static void wait_eintr(void) {
  int sv[2], efd = eventfd(0, 0), idx = -1, err = 0;
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
  struct sigaction sa = { .sa_handler = on_alarm }; /* no SA_RESTART: poll returns EINTR */
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = { .it_interval = {0, 10000}, .it_value = {0, 10000} }; /* every 10 ms */
  setitimer(ITIMER_REAL, &it, NULL);
  struct pollfd p[2] = {{sv[0], POLLIN, 0}, {-1, 0, 0}};
  int64_t t0 = mm_now_ms();
  int w = mm_wait(p, efd, t0 + 100, &idx, &err);
  int64_t took = mm_now_ms() - t0;
  CHECK(w == MM_TIMEOUT && took >= 100, "signals every 10 ms: still the deadline (got %d after %lld ms)", w, (long long)took);
}

int main(int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: native-units CASE\n"); return 2; }
  which = argv[1];
  if (strcmp(which, "open-checks-length") == 0) open_checks_length();
  else if (strcmp(which, "open-wipes-on-failure") == 0) open_wipes_on_failure();
  else if (strcmp(which, "wait-sockerr") == 0) wait_sockerr();
  else if (strcmp(which, "wait-eintr") == 0) wait_eintr();
  else wait_cases(which);
  printf("ok %s\n", which);
  return 0;
}
