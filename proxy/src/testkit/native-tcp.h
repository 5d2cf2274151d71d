/* A connected loopback TCP pair for the native C tests (testkit/native-units.c, test/native/splice-prefix.c).
 * The includer defines CHECK(cond, fmt, ...) first. */
#ifndef MM_NATIVE_TCP_H
#define MM_NATIVE_TCP_H
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

static void tcp_pair(int *a, int *b) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t sl = sizeof sa;
  CHECK(bind(l, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(l, 1) == 0 && getsockname(l, (struct sockaddr *)&sa, &sl) == 0, "listen");
  *a = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(connect(*a, (struct sockaddr *)&sa, sizeof sa) == 0, "connect");
  *b = accept(l, NULL, NULL);
  CHECK(*b >= 0, "accept");
  close(l);
}

#endif
