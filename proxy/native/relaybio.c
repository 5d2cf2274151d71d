/* The relay's buffer BIO (see relaybio.h). */
#include "relaybio.h"
#include <pthread.h>
#include <string.h>

static BIO_METHOD *method;
static pthread_once_t method_once = PTHREAD_ONCE_INIT;

static int rb_write(BIO *b, const char *d, int n) {
  relay_bio_t *r = BIO_get_data(b);
  BIO_clear_retry_flags(b);
  if (!r || n < 0) return -1;
  size_t room = r->out.cap - r->out.len;
  if (room == 0) { BIO_set_retry_write(b); return -1; }
  size_t k = (size_t)n < room ? (size_t)n : room; /* a short write is fine: OpenSSL writes the rest later */
  memcpy(r->out.b + r->out.len, d, k);
  r->out.len += k;
  return (int)k;
}

static int rb_read(BIO *b, char *d, int n) {
  relay_bio_t *r = BIO_get_data(b);
  BIO_clear_retry_flags(b);
  if (!r || n < 0) return -1;
  size_t avail = r->in.len - r->in.off;
  if (avail == 0) {
    if (r->in_eof) return 0; /* the end of the stream: OpenSSL tells a close_notify from a cut stream */
    BIO_set_retry_read(b);
    return -1;
  }
  size_t k = (size_t)n < avail ? (size_t)n : avail;
  memcpy(d, r->in.b + r->in.off, k);
  r->in.off += k;
  return (int)k;
}

static long rb_ctrl(BIO *b, int cmd, long num, void *ptr) {
  relay_bio_t *r = BIO_get_data(b);
  switch (cmd) {
    case BIO_CTRL_FLUSH: return 1; /* the relay sends `out` itself */
    case BIO_CTRL_EOF: return r && r->in_eof && r->in.off == r->in.len;
    case BIO_CTRL_PENDING: return r ? (long)(r->in.len - r->in.off) : 0;
    case BIO_CTRL_WPENDING: return r ? (long)(r->out.len - r->out.off) : 0;
    default: return 0;
  }
}

static int rb_create(BIO *b) {
  BIO_set_init(b, 1);
  return 1;
}

static int rb_destroy(BIO *b) { return 1; } /* the buffers belong to the relay */

static void make_method(void) {
  BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "mmproxy relay buffers");
  if (!m) return;
  if (!BIO_meth_set_write(m, rb_write) || !BIO_meth_set_read(m, rb_read) || !BIO_meth_set_ctrl(m, rb_ctrl) ||
      !BIO_meth_set_create(m, rb_create) || !BIO_meth_set_destroy(m, rb_destroy)) {
    BIO_meth_free(m);
    return;
  }
  method = m; /* lives as long as the process: sessions on any thread use it */
}

BIO *relay_bio_new(relay_bio_t *r) {
  pthread_once(&method_once, make_method);
  if (!method) return NULL;
  BIO *b = BIO_new(method);
  if (b) BIO_set_data(b, r);
  return b;
}

void relay_bio_detach(BIO *b) { BIO_set_data(b, NULL); }
