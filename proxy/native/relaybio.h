/* An OpenSSL BIO over two buffers of ours, used by the TLS relay (tlsrelay.c) once the handshake is done
 * (relaybio.c). OpenSSL reads TLS records from `in` and appends the records it writes to `out`. The relay
 * fills `in` with one recv(2) and empties `out` with one send(2), each of up to hundreds of KiB, where a
 * socket BIO costs one write(2) per 16 KiB record and two read(2)s per record without read-ahead. */
#ifndef MM_RELAYBIO_H
#define MM_RELAYBIO_H
#include <openssl/bio.h>
#include <stddef.h>

typedef struct {
  unsigned char *b;
  size_t off, len, cap; /* bytes [off, len) are waiting; [len, cap) is free */
} iobuf_t;

typedef struct {
  iobuf_t in;  /* TLS bytes received, not yet read by OpenSSL */
  iobuf_t out; /* TLS bytes OpenSSL wrote, not yet sent */
  int in_eof;  /* recv(2) returned 0 or failed: once `in` is empty, reads see the end of the stream */
  int in_err;  /* errno of a failed recv(2) (0: a FIN) */
} relay_bio_t;

/* A BIO reading from r->in and appending to r->out (NULL when OpenSSL cannot make one). A read of an empty
 * `in` and a write to a full `out` ask OpenSSL to retry (SSL_ERROR_WANT_READ / WANT_WRITE); a read at the end
 * of `in` after in_eof is the end of the stream. */
BIO *relay_bio_new(relay_bio_t *r);
/* Make the BIO refer to no buffers (every read and write fails from now on): call it before `r` goes away. */
void relay_bio_detach(BIO *b);

#endif
