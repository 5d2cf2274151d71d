/* Handshake and identity of the native mTLS endpoint (see tlsr.h): the OpenSSL context, phase 1 (handshake, the
 * peer's URI SANs, the header frames) and the callbacks that hand the record layer its secrets and counts. */
#define _GNU_SOURCE
#include "tlsr.h"
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tlsr_errstr(tlsr_t *t, const char *what) {
  unsigned long e = ERR_get_error();
  char buf[200] = "";
  if (e) ERR_error_string_n(e, buf, sizeof buf);
  else if (errno) snprintf(buf, sizeof buf, "%s", strerror(errno));
  else snprintf(buf, sizeof buf, "connection closed");
  snprintf(t->error, sizeof t->error, "%s: %s", what, buf);
  ERR_clear_error();
}

/* OpenSSL's keylog callback: keep the two application traffic secrets (generation 0) of this session */
static void keylog_cb(const SSL *ssl, const char *line) {
  tlsr_t *t = SSL_get_ex_data(ssl, 0);
  int i = strncmp(line, "CLIENT_TRAFFIC_SECRET_0 ", 24) == 0 ? 0 : strncmp(line, "SERVER_TRAFFIC_SECRET_0 ", 24) == 0 ? 1 : -1;
  const char *hex = strrchr(line, ' ');
  if (!t || i < 0 || !hex) return;
  size_t n = strlen(++hex) / 2;
  if (n > TLS13_SECRET_MAX) return;
  for (size_t k = 0; k < n; k++) {
    unsigned int v;
    if (sscanf(hex + 2 * k, "%2x", &v) != 1) return;
    t->secret[i][k] = (unsigned char)v;
  }
  t->secret_len[i] = n;
  if (!t->secrets_held) { t->secrets_held = 1; __atomic_add_fetch(&tlsr_secrets_held, 1, __ATOMIC_ACQ_REL); }
}

/* OpenSSL's message callback: the sequence numbers our record layer continues from, per direction. A direction's
 * application keys start with the record after its own Finished message (RFC 8446 section 7.2), whatever OpenSSL
 * does around it: an OpenSSL server writes its NewSessionTickets inside SSL_do_handshake, and a peer may send a
 * KeyUpdate right after its Finished. OpenSSL reports a record's header before the handshake message inside it
 * (read: the header when the record is read, the message once parsed; write: the header when the record is
 * sealed, the message once it is all written), so a Finished or KeyUpdate resets the count to 0 for the records
 * that follow it, and a KeyUpdate moves that direction to the next key generation. */
static void msg_cb(int write_p, int version, int content_type, const void *buf, size_t len, SSL *ssl, void *arg) {
  tlsr_t *t = SSL_get_ex_data(ssl, 0);
  int d = write_p ? 1 : 0;
  if (!t) return;
  if (content_type == SSL3_RT_HEADER) { if (t->counting[d]) t->recs[d]++; return; }
  if (content_type != SSL3_RT_HANDSHAKE || len < 1) return;
  unsigned char m = ((const unsigned char *)buf)[0];
  if (m == 20 && !t->counting[d]) { t->counting[d] = 1; t->recs[d] = 0; } /* Finished */
  else if (m == 24 && t->counting[d]) { t->gen[d]++; t->recs[d] = 0; }  /* KeyUpdate */
}

int tlsr_secrets_held;

void tlsr_wipe_secrets(tlsr_t *t) {
  OPENSSL_cleanse(t->secret, sizeof t->secret);
  t->secret_len[0] = t->secret_len[1] = 0;
  if (t->secrets_held) { t->secrets_held = 0; __atomic_sub_fetch(&tlsr_secrets_held, 1, __ATOMIC_ACQ_REL); }
}

/* wait for fd events or the cancel eventfd, bounded by the deadline; returns 1 ready, 0 timeout, -1 cancel */
int tlsr_wait_fd(tlsr_t *t, int fd, short ev, int64_t deadline) {
  struct pollfd p[2] = {{fd, ev, 0}, {-1, 0, 0}};
  int idx = 0, err = 0;
  int w = mm_wait(p, t->efd, deadline, &idx, &err);
  /* a socket error is "ready": the SSL call that follows reports it */
  return w == MM_CANCEL ? -1 : w == MM_READY || w == MM_SOCKERR ? 1 : 0;
}

/* Every URI SAN of the peer certificate, as an array (never joined into text). A URI that is not printable
 * ASCII, and any URI beyond MAX_URIS, is recorded as "": it still counts, and it never names anyone. */
static void add_uri(tlsr_t *t, const unsigned char *d, int len) {
  if (t->nuris >= MAX_URIS) return;
  int ok = len > 0 && len <= 1024;
  for (int i = 0; ok && i < len; i++) ok = d[i] >= 0x20 && d[i] <= 0x7e;
  char *s = malloc(ok ? (size_t)len + 1 : 1);
  if (!s) return;
  if (ok) memcpy(s, d, (size_t)len);
  s[ok ? len : 0] = 0;
  t->uris[t->nuris++] = s;
}

static void collect_uris(tlsr_t *t) {
  X509 *peer = SSL_get1_peer_certificate(t->ssl);
  if (!peer) return;
  int crit = 0;
  GENERAL_NAMES *names = X509_get_ext_d2i(peer, NID_subject_alt_name, &crit, NULL);
  if (!names && crit == -2) add_uri(t, NULL, 0), add_uri(t, NULL, 0); /* two SAN extensions: names no one */
  if (names) {
    int n = sk_GENERAL_NAME_num(names), seen = 0;
    for (int i = 0; i < n; i++) {
      GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
      if (g->type != GEN_URI) continue;
      if (++seen > MAX_URIS - 1) { add_uri(t, NULL, 0); break; } /* too many: one "" marker is enough */
      add_uri(t, ASN1_STRING_get0_data(g->d.uniformResourceIdentifier), ASN1_STRING_length(g->d.uniformResourceIdentifier));
    }
    GENERAL_NAMES_free(names);
  }
  X509_free(peer);
}

void tlsr_phase1(tlsr_t *t) {
  int rc = 0;
  SSL_RETRY(t, SSL_do_handshake(t->ssl), "TLS handshake");
  if (!rc) return;
  if (SSL_get_verify_result(t->ssl) != X509_V_OK) { snprintf(t->error, sizeof t->error, "peer certificate not verified"); return; }
  /* handshook is set once the identity is acceptable; JS still re-checks the URIs */
  collect_uris(t);
  /* the origin knows exactly whom it dials: exactly one URI SAN, byte-for-byte that identity */
  if (t->expect_uri && (t->nuris != 1 || strcmp(t->uris[0], t->expect_uri) != 0)) {
    snprintf(t->error, sizeof t->error, "peer certificate does not name exactly %s", t->expect_uri);
    return;
  }
  t->handshook = 1;
  /* tests: a KeyUpdate asking for the peer's, in the first record after our Finished (goes out with `first`) */
  if (t->early_key_update && SSL_key_update(t->ssl, SSL_KEY_UPDATE_REQUESTED) != 1) { tlsr_errstr(t, "KeyUpdate"); return; }
  size_t off = 0;
  while (off < t->first_len) {
    SSL_RETRY(t, SSL_write(t->ssl, t->first + off, (int)(t->first_len - off)), "write header");
    if (!rc) return;
    off += (size_t)rc;
  }
  if (t->splice_ok) { t->hdr_open = t->first; t->hdr_open_len = t->first_len; } /* the origin's OPEN */
  else OPENSSL_clear_free(t->first, t->first_len);
  t->first = NULL;
  t->first_len = 0;
  /* one frame: 8 bytes, then the body if the frame fits in header_max */
  t->frame = malloc(t->header_max);
  if (!t->frame) { snprintf(t->error, sizeof t->error, "out of memory"); return; }
  size_t need = 8;
  while (t->frame_len < need) {
    SSL_RETRY(t, SSL_read(t->ssl, t->frame + t->frame_len, (int)(need - t->frame_len)), "read header");
    if (!rc) { if (t->frame_len > 0) { t->ok = 1; } return; } /* JS judges a truncated frame */
    t->frame_len += (size_t)rc;
    if (t->frame_len == 8 && need == 8) {
      size_t total = 8 + (((size_t)t->frame[6] << 8) | t->frame[7]);
      if (total <= t->header_max && memcmp(t->frame, "MMTP", 4) == 0) need = total;
    }
  }
  t->ok = 1;
  if (t->splice_ok) { /* the terminus' OPEN or the origin's REPLY, for the binding */
    unsigned char *c = malloc(t->frame_len);
    if (!c) { t->ok = 0; snprintf(t->error, sizeof t->error, "out of memory"); return; }
    memcpy(c, t->frame, t->frame_len);
    if (t->is_server) { t->hdr_open = c; t->hdr_open_len = t->frame_len; }
    else { t->hdr_reply = c; t->hdr_reply_len = t->frame_len; }
  }
}

/* OpenSSL 3.2 and later (include/openssl/ssl.h of the OpenSSL 3.5.9 in Node 24.22.3: "don't send compressed
 * certificates, and ignore the extension when received"). The addon may be built against an older OpenSSL's headers
 * (the build host's); the gateway runs on Node's OpenSSL 3.5 or later (tls-stack.ts), and older ones ignore the bit. */
#ifndef SSL_OP_NO_TX_CERTIFICATE_COMPRESSION
#define SSL_OP_NO_TX_CERTIFICATE_COMPRESSION SSL_OP_BIT(32)
#endif

SSL_CTX *tlsr_ssl_ctx_new(const unsigned char *ca, size_t nca, const unsigned char *cert, size_t ncert,
                          const unsigned char *key, size_t nkey, const char **why) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_method());
  if (!ctx) { *why = "SSL_CTX_new"; return NULL; }
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_num_tickets(ctx, 0);
  /* SSL_OP_CLEANSE_PLAINTEXT: OpenSSL wipes the plaintext of records it has opened once the application has it.
   * SSL_OP_NO_TX_CERTIFICATE_COMPRESSION: OpenSSL 3.5 compresses a client's certificate (RFC 8879, Brotli at its
   * best quality) anew in every handshake: half of the origin's CPU per tunnel, 2.4 ms of its 5.3 (a profile of 600
   * short tunnels, docs/dev/lab/2026-12-03-mtls-open-probes.md), to save a few hundred bytes once per tunnel. We
   * send ours uncompressed; a peer's compressed certificate is still accepted. */
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION | SSL_OP_CLEANSE_PLAINTEXT | SSL_OP_NO_TX_CERTIFICATE_COMPRESSION);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
  SSL_CTX_set_security_level(ctx, 2); /* RSA/DH >= 2048 bits, ECC >= 224, anywhere in either chain */
  /* AES-128-GCM first: 10 AES rounds instead of 14, same GHASH and tag (both ends are ours, so this is the suite
   * every tunnel uses); the other TLS 1.3 suites stay allowed. MMPROXY_TLS_CIPHERSUITES overrides the list
   * (benchmarks compare suites with it). */
  SSL_CTX_set_ciphersuites(ctx, getenv("MMPROXY_TLS_CIPHERSUITES") ? getenv("MMPROXY_TLS_CIPHERSUITES")
                                : "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256");
  X509_STORE *store = SSL_CTX_get_cert_store(ctx);
  BIO *b = BIO_new_mem_buf(ca, (int)nca);
  int nc = 0;
  X509 *x;
  while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) { X509_STORE_add_cert(store, x); X509_free(x); nc++; }
  BIO_free(b);
  ERR_clear_error();
  if (nc == 0) { SSL_CTX_free(ctx); *why = "tlsContext: no CA certificate in caPem"; return NULL; }
  b = BIO_new_mem_buf(cert, (int)ncert);
  x = PEM_read_bio_X509(b, NULL, NULL, NULL);
  if (!x || SSL_CTX_use_certificate(ctx, x) != 1) { if (x) X509_free(x); BIO_free(b); SSL_CTX_free(ctx); *why = "tlsContext: bad certificate"; return NULL; }
  X509_free(x);
  while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) SSL_CTX_add_extra_chain_cert(ctx, x); /* ctx owns x */
  BIO_free(b);
  ERR_clear_error();
  b = BIO_new_mem_buf(key, (int)nkey);
  EVP_PKEY *pk = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
  BIO_free(b);
  if (!pk || SSL_CTX_use_PrivateKey(ctx, pk) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
    if (pk) EVP_PKEY_free(pk);
    SSL_CTX_free(ctx);
    *why = "tlsContext: bad private key";
    return NULL;
  }
  EVP_PKEY_free(pk);
  SSL_CTX_set_keylog_callback(ctx, keylog_cb);
#ifdef MMPROXY_TEST_HOOKS
  /* MMPROXY_TLS_TEST_TICKETS=n (test builds only, binding.gyp mm_test_hooks): a server sends n session tickets
   * after the handshake, to prove the record counts do not depend on tickets being off (they stay off
   * otherwise: nothing would resume). The shipped addon has no such switch. */
  const char *tk = getenv("MMPROXY_TLS_TEST_TICKETS");
  if (tk && atoi(tk) > 0) {
    SSL_CTX_clear_options(ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(ctx, (size_t)atoi(tk));
  }
#endif
  return ctx;
}

void tlsr_ssl_setup(tlsr_t *t) {
  /* No read-ahead, on every session. With it, OpenSSL 3.0 reads as much as its buffer holds and then, before each
   * record, memmoves the unread rest to the front of the buffer: 23% of the relay's user CPU in a profile of the
   * mTLS chain (16% in ssl3_get_record alone), against 8% for all copies without it (one read(2) for the record
   * header, one for the record). And a splice-capable session must stop reading at an exact record boundary. */
  SSL_set_read_ahead(t->ssl, 0);
  SSL_set_msg_callback(t->ssl, msg_cb);
  if (t->is_server) SSL_set_accept_state(t->ssl); else SSL_set_connect_state(t->ssl);
}
