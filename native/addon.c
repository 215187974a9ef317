/*
 * rostore's native addon: module entry and the small synchronous functions (hashes,
 * page-cache control). The mapping, index-scan and lookup glue live in their own files.
 * No global mutable state beyond once-initialised tables: everything a call needs comes from
 * its arguments or from the data pointer of the function it calls, so the module loads in any
 * number of threads.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hash/crc32.h"
#include "memory/mapping.h"
#include "hash/md5.h"
#include "napi-util.h"

/* md5(src: Uint8Array, out: Uint8Array): void -- writes 16 bytes at out[0]. */
static napi_value md5_fn(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  uint8_t *src, *out;
  size_t src_len, out_len;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2) return ro_throw_type(env, "md5(src, out)");
  if (ro_get_bytes(env, argv[0], &src, &src_len) != 0) return ro_throw_type(env, "md5: src must be a Uint8Array");
  if (ro_get_bytes(env, argv[1], &out, &out_len) != 0 || out_len < 16) return ro_throw_type(env, "md5: out must hold 16 bytes");
  ro_md5(src, src_len, out);
  return NULL;
}

/* crc32(src: Uint8Array, initial: number): number -- zlib's crc32(initial, src). */
static napi_value crc32_fn(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  uint8_t *src;
  size_t len;
  uint32_t initial = 0;
  napi_value result;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1) return ro_throw_type(env, "crc32(src, initial)");
  if (ro_get_bytes(env, argv[0], &src, &len) != 0) return ro_throw_type(env, "crc32: src must be a Uint8Array");
  if (argc > 1 && napi_get_value_uint32(env, argv[1], &initial) != napi_ok) return ro_throw_type(env, "crc32: initial must be a number");
  if (napi_create_uint32(env, ro_crc32(initial, src, len), &result) != napi_ok) return NULL;
  return result;
}

/* dropCache(path: string): number -- 0, or the errno of posix_fadvise(DONTNEED). */
static napi_value drop_cache_fn(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_value result;
  char *path;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1) return ro_throw_type(env, "dropCache(path)");
  int got = ro_get_string(env, argv[0], &path);
  if (got == RO_STRING_NOT_STRING) return ro_throw_type(env, "dropCache: path must be a string");
  if (got == RO_STRING_NO_MEMORY) return ro_throw_type(env, "dropCache: out of memory");
  int err = got == RO_STRING_HAS_NUL ? EINVAL : ro_drop_cache(path);
  free(path);
  if (napi_create_int32(env, err, &result) != napi_ok) return NULL;
  return result;
}

int ro_register_basic(napi_env env, napi_value exports) {
  if (ro_set_function(env, exports, "md5", md5_fn) != 0) return -1;
  if (ro_set_function(env, exports, "crc32", crc32_fn) != 0) return -1;
  if (ro_set_function(env, exports, "dropCache", drop_cache_fn) != 0) return -1;
  return 0;
}

/*
 * Node unloads an addon (dlclose) when the last worker thread that loaded it exits, but
 * that thread's isolate frees its buffers after that, and the buffers made here (mapped
 * windows, anonymous memory) free themselves through a function of this library: a call
 * into unmapped code. Opening the library once more with RTLD_NODELETE keeps it loaded
 * for the life of the process.
 */
static void pin_library(void) {
  Dl_info self;
  if (dladdr((void *)pin_library, &self) != 0 && self.dli_fname != NULL) dlopen(self.dli_fname, RTLD_NOW | RTLD_NODELETE);
}

static pthread_once_t pin_once = PTHREAD_ONCE_INIT;

NAPI_MODULE_INIT() {
  pthread_once(&pin_once, pin_library);
  ro_crc32_init();
  if (ro_register_basic(env, exports) != 0 || ro_register_map(env, exports) != 0 || ro_register_scan(env, exports) != 0 ||
      ro_register_lookup(env, exports) != 0 || ro_register_batch(env, exports) != 0 || ro_register_zstd(env, exports) != 0 || ro_register_snappy(env, exports) != 0 ||
      ro_register_anon(env, exports) != 0 || ro_register_socket(env, exports) != 0 || ro_register_durable(env, exports) != 0 ||
      ro_register_residency(env, exports) != 0 || ro_register_drop_behind(env, exports) != 0 ||
      ro_register_job_priority(env, exports) != 0 || ro_register_uring(env, exports) != 0) {
    napi_throw_error(env, NULL, "rostore native: registration failed");
    return NULL;
  }
  return exports;
}
