{
  "targets": [
    {
      "target_name": "rostore_native",
      "sources": [
        "native/addon.c",
        "native/anon-memory.c",
        "native/batch-napi.c",
        "native/crc32.c",
        "native/drop-behind.c",
        "native/durable-file.c",
        "native/index-scan.c",
        "native/lookup.c",
        "native/lookup-napi.c",
        "native/map-napi.c",
        "native/mapping.c",
        "native/md5.c",
        "native/napi-util.c",
        "native/residency.c",
        "native/residency-napi.c",
        "native/scan-napi.c",
        "native/socket-send.c",
        "native/unaccounted-window.cc",
        "native/xxh64.c",
        "native/zstd-napi.c"
      ],
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
