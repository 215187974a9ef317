{
  "targets": [
    {
      "target_name": "rostore_native",
      "sources": [
        "native/addon.c",
        "native/batch-napi.c",
        "native/crc32.c",
        "native/index-scan.c",
        "native/lookup.c",
        "native/lookup-napi.c",
        "native/map-napi.c",
        "native/mapping.c",
        "native/md5.c",
        "native/napi-util.c",
        "native/scan-napi.c",
        "native/xxh64.c"
      ],
      "defines": ["NAPI_VERSION=8"],
      "cflags": ["-std=c11", "-Wall", "-Wextra", "-Werror"],
      "cflags!": ["-fno-exceptions"],
      "xcode_settings": {
        "OTHER_CFLAGS": ["-std=c11", "-Wall", "-Wextra", "-Werror"]
      }
    }
  ]
}
