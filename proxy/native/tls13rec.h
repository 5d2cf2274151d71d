/* TLS 1.3 record protection of our own (RFC 8446 sections 5.1 to 5.5 and 7.1 to 7.3), used by the mTLS relay
 * once OpenSSL has done the handshake and the header frames (tls13rec.c).
 *
 * Why: OpenSSL 3.0 encrypts only from its own write buffer and decrypts only into its own read buffer, so every
 * byte is copied twice in user space on each side (into and out of OpenSSL's buffers). Sealing and opening
 * records in place in the relay's buffers removes those copies; the cipher calls are the same EVP calls OpenSSL's
 * record layer makes. The traffic secrets come from OpenSSL (keylog callback), the record counts from its message
 * callback, so the switch happens mid-stream at the exact sequence number, and the wire is plain TLS 1.3: a peer
 * on OpenSSL's record layer (an older gateway, Node's tls) interoperates, KeyUpdate included. */
#ifndef MM_TLS13REC_H
#define MM_TLS13REC_H
#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>

#define TLS13_HDR 5
#define TLS13_TAG 16
#define TLS13_MAX_PLAIN 16384
#define TLS13_MAX_CIPHER (TLS13_MAX_PLAIN + 256)                            /* RFC 8446 section 5.2 */
#define TLS13_MAX_RECORD (TLS13_HDR + TLS13_MAX_CIPHER)
#define TLS13_FULL_RECORD (TLS13_HDR + TLS13_MAX_PLAIN + 1 + TLS13_TAG) /* what we send for 16 KiB of payload */
#define TLS13_SECRET_MAX 48

enum { TLS13_CT_ALERT = 21, TLS13_CT_HANDSHAKE = 22, TLS13_CT_APP = 23 };
/* alert descriptions we send (RFC 8446 section 6) */
enum { TLS13_A_CLOSE_NOTIFY = 0, TLS13_A_UNEXPECTED = 10, TLS13_A_BAD_MAC = 20, TLS13_A_OVERFLOW = 22, TLS13_A_ILLEGAL = 47, TLS13_A_DECODE = 50 };

/* One direction of a connection: the current traffic secret, key, IV and sequence number. */
typedef struct {
  EVP_CIPHER_CTX *ctx;
  const EVP_CIPHER *cipher;
  const EVP_MD *md;
  size_t key_len;
  unsigned char secret[TLS13_SECRET_MAX];
  size_t secret_len;
  unsigned char iv[12];
  uint64_t seq; /* records protected with this key so far */
  int enc;      /* 1 = seal (our sends), 0 = open (the peer's records) */
} tls13_dir_t;

/* 1 when `suite` (the low 16 bits of SSL_CIPHER_get_id: 0x1301, 0x1302 or 0x1303) is one we can run */
int tls13_suite_supported(uint16_t suite);
/* keys from a traffic secret, starting at record `seq`; 1 = ok, 0 = failed (d is cleared either way on failure) */
int tls13_dir_init(tls13_dir_t *d, uint16_t suite, const unsigned char *secret, size_t len, uint64_t seq, int enc);
/* the next generation (KeyUpdate, RFC 8446 section 7.2): secret = HKDF-Expand-Label(secret, "traffic upd"), seq 0 */
int tls13_dir_update(tls13_dir_t *d);
void tls13_dir_clear(tls13_dir_t *d);
/* Seal in place: the content is at rec + 5, `n` bytes (at most 16384); rec must have room for n + 22 bytes.
 * Writes the header, the inner type byte and the tag; returns the record's length, 0 on failure. */
size_t tls13_seal(tls13_dir_t *d, unsigned char *rec, size_t n, unsigned char type);
/* Length of the record that starts at rec (its 5-byte header must be there): 0 when the header is not a
 * protected TLS 1.3 record (*alert says why). */
size_t tls13_record_len(const unsigned char *rec, int *alert);
/* Open in place a whole record (tls13_record_len bytes at rec: the caller has them all; the header is checked
 * again here): the content is then at rec + 5, *n bytes, of inner type *type. 0 = ok, otherwise the alert to send
 * (bad_record_mac, unexpected_message, record_overflow: a padded inner plaintext over 2^14 + 1 bytes, s.5.4). */
int tls13_open(tls13_dir_t *d, unsigned char *rec, size_t *n, unsigned char *type);

#endif
