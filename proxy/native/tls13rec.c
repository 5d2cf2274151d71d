/* TLS 1.3 record protection in place (see tls13rec.h). */
#include "tls13rec.h"
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <string.h>

int tls13_suite_supported(uint16_t suite) { return suite == 0x1301 || suite == 0x1302 || suite == 0x1303; }

/* HKDF-Expand-Label(secret, label, "", len) (RFC 8446 section 7.1). Every output here (a key, an IV, a traffic
 * secret) is at most one hash long, so HKDF-Expand is the single block T(1) = HMAC(secret, HkdfLabel || 0x01). */
static int expand_label(const EVP_MD *md, const unsigned char *secret, size_t slen, const char *label, unsigned char *out, size_t len) {
  unsigned char info[2 + 1 + 6 + 16 + 1 + 1], t[EVP_MAX_MD_SIZE];
  unsigned int tl = 0;
  size_t ll = strlen(label), i = 0;
  if (ll > 16 || len > (size_t)EVP_MD_get_size(md)) return 0;
  info[i++] = (unsigned char)(len >> 8);
  info[i++] = (unsigned char)len;
  info[i++] = (unsigned char)(6 + ll);
  memcpy(info + i, "tls13 ", 6);
  i += 6;
  memcpy(info + i, label, ll);
  i += ll;
  info[i++] = 0; /* empty context */
  info[i++] = 1; /* the HKDF-Expand block counter */
  int ok = HMAC(md, secret, (int)slen, info, i, t, &tl) != NULL && tl >= len;
  if (ok) memcpy(out, t, len);
  OPENSSL_cleanse(t, sizeof t);
  return ok;
}

/* key and IV of the current secret into the cipher context */
static int load_keys(tls13_dir_t *d) {
  unsigned char key[32];
  int ok = expand_label(d->md, d->secret, d->secret_len, "key", key, d->key_len) &&
           expand_label(d->md, d->secret, d->secret_len, "iv", d->iv, sizeof d->iv) &&
           EVP_CipherInit_ex(d->ctx, d->cipher, NULL, NULL, NULL, d->enc) == 1 &&
           EVP_CIPHER_CTX_ctrl(d->ctx, EVP_CTRL_AEAD_SET_IVLEN, sizeof d->iv, NULL) == 1 &&
           EVP_CipherInit_ex(d->ctx, NULL, NULL, key, NULL, d->enc) == 1;
  OPENSSL_cleanse(key, sizeof key);
  return ok;
}

void tls13_dir_clear(tls13_dir_t *d) {
  if (d->ctx) EVP_CIPHER_CTX_free(d->ctx);
  OPENSSL_cleanse(d, sizeof *d);
}

int tls13_dir_init(tls13_dir_t *d, uint16_t suite, const unsigned char *secret, size_t len, uint64_t seq, int enc) {
  memset(d, 0, sizeof *d);
  d->cipher = suite == 0x1301 ? EVP_aes_128_gcm() : suite == 0x1302 ? EVP_aes_256_gcm() : suite == 0x1303 ? EVP_chacha20_poly1305() : NULL;
  d->md = suite == 0x1302 ? EVP_sha384() : EVP_sha256();
  d->key_len = suite == 0x1301 ? 16 : 32;
  d->enc = enc;
  d->seq = seq;
  if (!d->cipher || len != (size_t)EVP_MD_get_size(d->md) || len > sizeof d->secret) return 0;
  memcpy(d->secret, secret, len);
  d->secret_len = len;
  d->ctx = EVP_CIPHER_CTX_new();
  if (d->ctx && load_keys(d)) return 1;
  tls13_dir_clear(d);
  return 0;
}

int tls13_dir_update(tls13_dir_t *d) {
  unsigned char next[TLS13_SECRET_MAX];
  if (!expand_label(d->md, d->secret, d->secret_len, "traffic upd", next, d->secret_len)) return 0;
  memcpy(d->secret, next, d->secret_len);
  OPENSSL_cleanse(next, sizeof next);
  d->seq = 0;
  return load_keys(d);
}

/* per-record nonce: the IV XOR the 64-bit sequence number, right-aligned (RFC 8446 section 5.3) */
static void nonce(const tls13_dir_t *d, unsigned char n[12]) {
  memcpy(n, d->iv, 12);
  for (int i = 0; i < 8; i++) n[11 - i] ^= (unsigned char)(d->seq >> (8 * i));
}

size_t tls13_seal(tls13_dir_t *d, unsigned char *rec, size_t n, unsigned char type) {
  size_t clen = n + 1 + TLS13_TAG;
  unsigned char nc[12];
  int l = 0;
  if (n > TLS13_MAX_PLAIN) return 0;
  rec[0] = TLS13_CT_APP;
  rec[1] = 3;
  rec[2] = 3;
  rec[3] = (unsigned char)(clen >> 8);
  rec[4] = (unsigned char)clen;
  rec[TLS13_HDR + n] = type;
  nonce(d, nc);
  unsigned char *p = rec + TLS13_HDR;
  if (EVP_CipherInit_ex(d->ctx, NULL, NULL, NULL, nc, 1) != 1 || EVP_CipherUpdate(d->ctx, NULL, &l, rec, TLS13_HDR) != 1 ||
      EVP_CipherUpdate(d->ctx, p, &l, p, (int)(n + 1)) != 1 || EVP_CipherFinal_ex(d->ctx, p + n + 1, &l) != 1 ||
      EVP_CIPHER_CTX_ctrl(d->ctx, EVP_CTRL_AEAD_GET_TAG, TLS13_TAG, p + n + 1) != 1)
    return 0;
  d->seq++;
  return TLS13_HDR + clen;
}

size_t tls13_record_len(const unsigned char *rec, int *alert) {
  size_t clen = ((size_t)rec[3] << 8) | rec[4];
  /* after the handshake every record is protected: its outer type is application_data (section 5.2); the legacy
   * version is ignored, as section 5.1 asks */
  if (rec[0] != TLS13_CT_APP) { *alert = TLS13_A_UNEXPECTED; return 0; }
  if (clen > TLS13_MAX_CIPHER) { *alert = TLS13_A_OVERFLOW; return 0; }
  if (clen < TLS13_TAG + 1) { *alert = TLS13_A_BAD_MAC; return 0; } /* no room for a type byte: cannot authenticate */
  return TLS13_HDR + clen;
}

int tls13_open(tls13_dir_t *d, unsigned char *rec, size_t *n, unsigned char *type) {
  int alert = 0;
  size_t len = tls13_record_len(rec, &alert);
  if (!len) return alert;
  size_t m = len - TLS13_HDR - TLS13_TAG; /* TLSInnerPlaintext: content, type byte, zero padding */
  if (m > TLS13_MAX_PLAIN + 1) return TLS13_A_OVERFLOW; /* section 5.4: at most 2^14 + 1 bytes, padding included */
  unsigned char nc[12];
  unsigned char *p = rec + TLS13_HDR;
  int l = 0;
  nonce(d, nc);
  if (EVP_CipherInit_ex(d->ctx, NULL, NULL, NULL, nc, 0) != 1 || EVP_CipherUpdate(d->ctx, NULL, &l, rec, TLS13_HDR) != 1 ||
      EVP_CipherUpdate(d->ctx, p, &l, p, (int)m) != 1 || EVP_CIPHER_CTX_ctrl(d->ctx, EVP_CTRL_AEAD_SET_TAG, TLS13_TAG, p + m) != 1 ||
      EVP_CipherFinal_ex(d->ctx, p + m, &l) != 1) {
    OPENSSL_cleanse(p, m); /* whatever the failed open left there is not authenticated plaintext: never keep it */
    return TLS13_A_BAD_MAC;
  }
  d->seq++;
  while (m > 0 && p[m - 1] == 0) m--; /* padding: zeros after the type byte (section 5.4) */
  if (m == 0) return TLS13_A_UNEXPECTED;
  *type = p[m - 1];
  *n = m - 1;
  return 0;
}
