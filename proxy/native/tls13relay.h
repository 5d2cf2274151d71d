/* The mTLS relay on our own TLS 1.3 records (tls13relay.c): plaintext socket <-> TLS socket, records sealed and
 * opened in place in the relay's buffers (tls13rec.h). tlsrelay.c hands it the session once OpenSSL has done the
 * handshake and the header frames. */
#ifndef MM_TLS13RELAY_H
#define MM_TLS13RELAY_H
#include "tls13rec.h"

/* the AES-GCM limit of RFC 8446 section 5.5 is 2^24.5 full records per key; we update well before it */
#define TLS13_KEY_UPDATE_DEFAULT (1ull << 24)
#define TLS13_KEY_UPDATE_MAX 23726566ull /* floor(2^24.5): MMPROXY_TLS_KEY_UPDATE_RECORDS may not exceed it */

typedef struct {
  int fd;               /* TLS socket (non-blocking) */
  int pfd;              /* plaintext socket (non-blocking) */
  int efd;              /* eventfd: readable = cancel */
  int idle_ms;          /* 0 = no idle limit */
  tls13_dir_t rd, wr;   /* the peer's records / ours; the relay clears both when it ends */
  const unsigned char *pending; /* plaintext OpenSSL had already decrypted: delivered first (caller owns it) */
  size_t pending_len;
  int peer_closed;      /* OpenSSL already read the peer's close_notify */
  uint64_t key_update_records; /* records per key before we send a KeyUpdate (0 = TLS13_KEY_UPDATE_DEFAULT) */
  int key_update_request; /* our KeyUpdates ask for the peer's (update_requested): off unless told (see key_update) */
  int key_update_owed;  /* the peer asked OpenSSL for a KeyUpdate it has not sent yet: ours goes first */
  uint64_t *bytes;      /* [0] TLS -> plaintext, [1] plaintext -> TLS; __atomic updates */
  /* results: the R_* of splice.h, the failed socket (0 = TLS, 1 = plaintext, -1 none), errno, and why */
  int reason, side, err;
  const char *error;    /* NULL or a static text: what was wrong with the peer's records */
  uint64_t key_updates[2]; /* [0] received, [1] sent */
} tls13_relay_t;

/* relay until both directions are finished, a socket fails, the peer's records do not verify, the idle limit or
 * a cancel; a forced end arms SO_LINGER {1, 0} on both sockets (close = RST) */
void tls13_relay_run(tls13_relay_t *r);

#endif
