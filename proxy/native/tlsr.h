/* The native mTLS tunnel endpoint's session (tlsrelay.c describes the JavaScript surface). Its files, by role:
 *   tlshandshake.c  handshake and identity: the SSL_CTX, phase 1 (handshake, peer URIs, header frames), the
 *                   keylog and message callbacks that give the record layer its secrets and counts
 *   tlshandover.c   session hand-over: phase 2's thread, to our own records (tls13relay.c), to OpenSSL's
 *                   (tlsopenssl.c) or to the kernel splice after the binding exchange (splice.c)
 *   tlsopenssl.c    the relay loop on OpenSSL's records (MMPROXY_TLS_RECORDS=openssl, suites we do not run)
 *   tlsrelay.c      the N-API functions
 *   ioready.c       shared I/O helpers (the one readiness wait) */
#ifndef MM_TLSR_H
#define MM_TLSR_H
#include <node_api.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdint.h>
#include "budget.h"
#include "ioready.h"
#include "tls13rec.h"

#define BUF_SZ (256 * 1024)
#define MAX_URIS 8

enum { T_EOF = 0, T_RESET, T_IDLE, T_CANCEL, T_ERROR };

typedef struct tlsr tlsr_t;
typedef struct { tlsr_t *t; int phase; } tlsr_msg_t;
struct tlsr {
  SSL *ssl;
  int fd;      /* TLS socket */
  int pfd;     /* plaintext socket (phase 2) */
  int is_server;
  int64_t deadline;
  unsigned char *first;
  size_t first_len;
  size_t header_max;
  /* phase 1 results */
  int ok;
  char error[256];
  char *uris[MAX_URIS];
  int nuris;
  unsigned char *frame; /* header_max bytes, phase 1 only (freed once JS has copied it) */
  size_t frame_len;
  /* phase 2 command */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int have_cmd, cancelled, finished;
  unsigned char *reply;
  size_t reply_len;
  int idle_ms;
  int efd;
  /* results */
  uint64_t bytes[2]; /* [0] tls -> plain, [1] plain -> tls */
  int reason, side, err;
  int handshook;
  char *expect_uri; /* client: the exact identity the server must present */
  /* our own record layer after the header frames (tls13relay.c): the application traffic secrets as OpenSSL's
   * keylog callback gives them ([0] client, [1] server), and the records OpenSSL has read [0] and written [1]
   * since the handshake (its message callback), which are the sequence numbers the relay continues from */
  int own_records, key_update_request, early_key_update;
  uint64_t key_update_records;
  unsigned char secret[2][TLS13_SECRET_MAX];
  size_t secret_len[2];
  int counting[2];   /* [0] the peer's Finished was read, [1] ours was written: application keys from here on */
  uint64_t recs[2];  /* records read [0] / written [1] under the current application key */
  unsigned gen[2];
  int secrets_held;  /* secret[] holds keylog secrets, counted in tlsr_secrets_held until tlsr_wipe_secrets */   /* KeyUpdates OpenSSL processed per direction after the Finished (key generation) */
  /* authenticated splice (see splice_phase2) */
  int splice_ok;    /* tlsStart flag: no read-ahead, keep the tunnel header for the binding */
  int splice;       /* tlsContinue: switch to the kernel splice after the binding exchange */
  mm_budget *budget; /* tlsContinue: the peer's bandwidth budget for the spliced bytes toward the tunnel (a reference; NULL: none) */
  int64_t hs_ms;    /* handshakeTimeoutMs: also bounds the binding exchange */
  unsigned char *hdr_open, *hdr_reply; /* the OPEN and REPLY frames exactly as sent/received */
  size_t hdr_open_len, hdr_reply_len;
  napi_threadsafe_function tsfn;
  int refs;
};


/* sessions whose OpenSSL state is still allocated (tlsLive): it is freed when the thread ends, not by GC */
extern int tlsr_live_sessions;
/* native memory V8 is told about: the struct while its handle lives, and the session while it runs */
#define LIVE_COST ((int64_t)(4 * BUF_SZ + 96 * 1024))
/* process totals (tlsRecordStats): sessions relayed on our own records, on OpenSSL's; KeyUpdates received and sent
 * by origins (TLS clients), then by termini (TLS servers) */
#define RECORD_STATS 6
extern uint64_t tlsr_record_stats[RECORD_STATS];

/* tlshandshake.c */
SSL_CTX *tlsr_ssl_ctx_new(const unsigned char *ca, size_t nca, const unsigned char *cert, size_t ncert,
                          const unsigned char *key, size_t nkey, const char **why);
void tlsr_ssl_setup(tlsr_t *t); /* callbacks, read-ahead off, role */
void tlsr_errstr(tlsr_t *t, const char *what);
int tlsr_wait_fd(tlsr_t *t, int fd, short ev, int64_t deadline);
void tlsr_phase1(tlsr_t *t);
/* run an SSL operation until done: sets rc >0 done, 0 failed (error set) */
#define SSL_RETRY(t, expr, what)                                            \
  for (;;) {                                                                \
    ERR_clear_error();                                                      \
    int _r = (expr);                                                        \
    if (_r > 0) { rc = _r; break; }                                         \
    int _e = SSL_get_error((t)->ssl, _r);                                   \
    short _ev = _e == SSL_ERROR_WANT_READ ? POLLIN : _e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0; \
    if (!_ev) { tlsr_errstr((t), (what)); rc = 0; break; }                   \
    int _w = tlsr_wait_fd((t), (t)->fd, _ev, (t)->deadline);                     \
    if (_w <= 0) { snprintf((t)->error, sizeof (t)->error, "%s: %s", (what), _w == 0 ? "timed out" : "cancelled"); rc = 0; break; } \
  }


/* sessions holding traffic secrets right now (tlsSecretsHeld): every path wipes them when it no longer needs them */
extern int tlsr_secrets_held;
void tlsr_wipe_secrets(tlsr_t *t);

/* tlshandover.c */
void *tlsr_thread(void *arg);
void tlsr_unref(tlsr_t *t);
/* per-peer bandwidth budgets (mmproxy.c): the budget behind a budgetCreate() handle with a reference taken
 * (NULL for undefined/null; *bad set for anything else), and dropping such a reference */
mm_budget *mm_budget_from_js(napi_env env, napi_value v, int *bad);
void mm_budget_put(mm_budget *b);
void tlsr_free_phase1(tlsr_t *t);

/* tlsopenssl.c (called by tlshandover.c only; it calls nothing there) */
void tlsr_relay_openssl(tlsr_t *t);

#endif
