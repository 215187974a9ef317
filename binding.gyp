{
  "targets": [
    {
      "target_name": "rostore_native",
      "sources": [
        "native/addon.c",
        "native/memory/anon-memory.c",
        "native/lookup/batch-napi.c",
        "native/hash/crc32.c",
        "native/io/drop-behind.c",
        "native/io/durable-file.c",
        "native/io/job-priority.c",
        "native/lookup/index-scan.c",
        "native/lookup/lookup.c",
        "native/lookup/lookup-napi.c",
        "native/memory/map-napi.c",
        "native/memory/mapping.c",
        "native/hash/md5.c",
        "native/napi-util.c",
        "native/memory/residency.c",
        "native/memory/residency-napi.c",
        "native/lookup/scan-napi.c",
        "native/io/snappy.c",
        "native/io/snappy-napi.c",
        "native/io/socket-send.c",
        "native/memory/unaccounted-window.cc",
        "native/hash/xxh64.c",
        "native/io/uring-napi.c",
        "native/io/uring-reads.c",
        "native/io/uring-ring.c",
        "native/io/zstd-napi.c"
      ],
      "include_dirs": ["native"],
      "defines": ["NAPI_VERSION=8"],
      "libraries": ["-ldl", "-lpthread"],
      "cflags": ["-Wall", "-Wextra", "-Werror"],
      "cflags_c": ["-std=c11"],
      "cflags_cc": ["-std=gnu++17", "-Wno-unused-parameter"],
      "cflags!": ["-fno-exceptions"],
      "xcode_settings": {
        "OTHER_CFLAGS": ["-std=c11", "-Wall", "-Wextra", "-Werror"],
        "OTHER_CPLUSPLUSFLAGS": ["-std=gnu++17", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"]
      }
    }
  ]
}
