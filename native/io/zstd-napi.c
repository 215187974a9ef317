/*
 * ZSTD decompression of Parquet pages into a buffer the caller sized from the page header,
 * through the system's libzstd. It is loaded with dlopen, so building the addon needs
 * neither its headers nor a link-time dependency (on Debian, dpkg itself depends on
 * libzstd1); without it the call says so and the caller uses its other decoder. The npm
 * binding it replaces on the build's path grew its output while decompressing: copies, and
 * fresh pages touched twice per page.
 *
 * The function pointers are set once (pthread_once) and only read afterwards, so the
 * module stays safe to load in any number of threads.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include "napi-util.h"

typedef size_t (*zstd_decompress_fn)(void *dst, size_t capacity, const void *src, size_t size);
typedef unsigned (*zstd_is_error_fn)(size_t code);
typedef const char *(*zstd_error_name_fn)(size_t code);

static pthread_once_t zstd_once = PTHREAD_ONCE_INIT;
static zstd_decompress_fn zstd_decompress;
static zstd_is_error_fn zstd_is_error;
static zstd_error_name_fn zstd_error_name;

static void zstd_load(void) {
  void *lib = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) return;
  zstd_decompress_fn d = (zstd_decompress_fn)dlsym(lib, "ZSTD_decompress");
  zstd_is_error_fn e = (zstd_is_error_fn)dlsym(lib, "ZSTD_isError");
  zstd_error_name_fn n = (zstd_error_name_fn)dlsym(lib, "ZSTD_getErrorName");
  if (d == NULL || e == NULL || n == NULL) return;
  zstd_is_error = e;
  zstd_error_name = n;
  zstd_decompress = d;
}

/* zstdDecompress(src: Uint8Array, dst: Uint8Array): number -- the bytes written into dst
 * (every frame of src, one after the other), or -1 when libzstd is not available. Throws an
 * Error with zstd's reason when the data does not decompress into dst. */
static napi_value zstd_decompress_fn_napi(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  uint8_t *src, *dst;
  size_t src_len, dst_len;
  napi_value result;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2) return ro_throw_type(env, "zstdDecompress(src, dst)");
  if (ro_get_bytes(env, argv[0], &src, &src_len) != 0) return ro_throw_type(env, "zstdDecompress: src must be a Uint8Array");
  if (ro_get_bytes(env, argv[1], &dst, &dst_len) != 0) return ro_throw_type(env, "zstdDecompress: dst must be a Uint8Array");
  pthread_once(&zstd_once, zstd_load);
  double written = -1;
  if (zstd_decompress != NULL) {
    size_t n = zstd_decompress(dst, dst_len, src, src_len);
    if (zstd_is_error(n)) {
      napi_throw_error(env, "RO_ZSTD", zstd_error_name(n));
      return NULL;
    }
    written = (double)n;
  }
  if (napi_create_double(env, written, &result) != napi_ok) return NULL;
  return result;
}

int ro_register_zstd(napi_env env, napi_value exports) {
  return ro_set_function(env, exports, "zstdDecompress", zstd_decompress_fn_napi);
}
