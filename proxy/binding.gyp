{
  "variables": {
    "mm_test_hooks%": "0"
  },
  "targets": [
    {
      "target_name": "mmproxy",
      "sources": ["native/mmproxy.c", "native/ioready.c", "native/splice.c", "native/relaypool.c", "native/tlsrelay.c", "native/tlshandshake.c", "native/tlshandover.c", "native/tlsopenssl.c", "native/relaybio.c", "native/tls13rec.c", "native/tls13relay.c", "native/budget.c"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "libraries": ["-lpthread"],
      "conditions": [
        ["mm_test_hooks==1", {"defines": ["MMPROXY_TEST_HOOKS"]}]
      ]
    }
  ]
}
