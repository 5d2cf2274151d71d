/*
 * The splice relays' salvage when the failure is found writing JavaScript's prefix (splice.c, pass_prefix):
 * the destination answered and reset before the relay wrote the bytes the terminus had read with the OPEN, so
 * that write is where the relay learns of the reset. What the destination sent before it must still reach the
 * tunnel, as when the failure is found by a splice (pass_splice): one salvage path (ioready.h's rule). Run by
 * proxy/src/test/splice-prefix-salvage.test.ts under ASan + UBSan, one case per call: `thread` (splice_run) or
 * `pool` (relaypool.c).
 */
#define _GNU_SOURCE
#include "splice.h"
#include "relaypool.h"
#include "ioready.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *which;
#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "FAIL %s (line %d): ", which, __LINE__); \
  fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } } while (0)

#include "../../testkit/native-tcp.h"

static void ended(splice_io_t *p, void *arg) { uint64_t one = 1; (void)p; CHECK(write(*(int *)arg, &one, sizeof one) == 8, "ended"); }

#define ANSWER 60000

int main(int argc, char **argv) {
  if (argc != 2 || (strcmp(argv[1], "thread") != 0 && strcmp(argv[1], "pool") != 0)) { fprintf(stderr, "usage: splice-prefix thread|pool\n"); return 2; }
  which = argv[1];
  /* origin <-> tunnel end (fd[0]); the gateway's destination socket (fd[1]) <-> the destination */
  int origin, tun, gw_dst, dst;
  tcp_pair(&origin, &tun);
  tcp_pair(&gw_dst, &dst);
  static unsigned char answer[ANSWER], buf[ANSWER + 1];
  for (size_t i = 0; i < sizeof answer; i++) answer[i] = (unsigned char)(i * 7 + 1);
  /* the destination answers and resets before the relay has written a byte toward it */
  CHECK(write(dst, answer, sizeof answer) == (ssize_t)sizeof answer, "the answer");
  mm_arm_reset(dst);
  close(dst);
  struct timespec ts = {0, 20 * 1000000};
  nanosleep(&ts, NULL); /* the answer and the RST are queued at gw_dst before the relay starts */
  uint64_t bytes[2] = {0, 0};
  static splice_io_t io;
  static unsigned char prefix[] = "the client's first bytes, read with the OPEN";
  io.fd[0] = tun; io.fd[1] = gw_dst; io.bytes = bytes; io.side = -1;
  io.prefix[0] = prefix; io.prefix_len[0] = sizeof prefix - 1;
  io.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  fcntl(tun, F_SETFL, O_NONBLOCK); fcntl(gw_dst, F_SETFL, O_NONBLOCK);
  CHECK(splice_io_pipes(&io) == 0, "pipes");
  if (strcmp(which, "pool") == 0) {
    int efd = eventfd(0, EFD_CLOEXEC);
    uint64_t n;
    CHECK(relay_pool_submit(&io, ended, &efd) == 0, "submit");
    CHECK(read(efd, &n, sizeof n) == 8, "wait for the pool's end");
    close(efd);
  } else {
    splice_run(&io);
  }
  CHECK(io.reason == R_RESET && io.side == 1, "reason %d side %d (err %d)", io.reason, io.side, io.err);
  CHECK(bytes[1] == ANSWER, "the relay moved %llu of the destination's %d bytes toward the tunnel", (unsigned long long)bytes[1], ANSWER);
  close(tun); /* armed {1, 0} by the relay: an RST after the answer */
  size_t got = 0;
  ssize_t r;
  while ((r = read(origin, buf + got, sizeof buf - got)) > 0) got += (size_t)r;
  CHECK(got == ANSWER && r < 0 && errno == ECONNRESET, "the origin read %zu of %d bytes, then %s", got, ANSWER, r == 0 ? "EOF" : strerror(errno));
  CHECK(memcmp(buf, answer, ANSWER) == 0, "the answer's bytes, in order");
  close(origin); close(gw_dst); close(io.efd);
  printf("ok %s: %zu bytes, then the reset\n", which, got);
  return 0;
}
