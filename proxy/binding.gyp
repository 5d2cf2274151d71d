{
  "targets": [
    {
      "target_name": "mmproxy",
      "sources": ["native/mmproxy.c"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "libraries": ["-lpthread"]
    }
  ]
}
