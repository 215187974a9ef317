/*
 * Large working memory (the builder's sort arena and its arrays, decompressed Parquet
 * pages) as SharedArrayBuffers over anonymous mappings that ask for transparent huge pages.
 *
 * Every first touch of a 4 KiB page of fresh memory is a page fault, and on the VMs this
 * project runs on (nested paging) a fault is costly; with MADV_HUGEPAGE there is one fault
 * per 2 MiB. A build touches its arena once, so those faults were a large share of a
 * build worker's time. Where the kernel's THP mode
 * is "never", or the madvise fails, the memory is ordinary 4 KiB pages: correct, just
 * slower. Private mappings are enough: the worker threads that share a run are threads of
 * one process.
 *
 * The buffer is not counted by V8 as external memory (see unaccounted-window.cc); its
 * mapping is unmapped when the last SharedArrayBuffer of it is collected.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "napi-util.h"
#include "memory/unaccounted-window.h"

/* Regions smaller than a huge page gain nothing and would waste the rest of one. */
#define HUGE_PAGE (2u << 20)

typedef struct {
  void *base;
  size_t length;
} anon_region;

static void release_region(void *ctx) {
  anon_region *r = ctx;
  munmap(r->base, r->length);
  free(r);
}

/* anonBuffer(bytes: number): SharedArrayBuffer -- zero-filled; throws RO_NOMEM when the
 * mapping fails. */
static napi_value anon_buffer_fn(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  double bytes;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || napi_get_value_double(env, argv[0], &bytes) != napi_ok ||
      !(bytes >= 1) || bytes > 0x7fffffff) {
    return ro_throw_type(env, "anonBuffer(bytes): 1 to 2^31-1 bytes");
  }
  size_t length = (size_t)bytes;
  anon_region *r = malloc(sizeof *r);
  void *base = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (r == NULL || base == MAP_FAILED) {
    int err = base == MAP_FAILED ? errno : ENOMEM;
    if (base != MAP_FAILED) munmap(base, length);
    free(r);
    napi_throw_error(env, "RO_NOMEM", strerror(err));
    return NULL;
  }
#ifdef MADV_HUGEPAGE
  if (length >= HUGE_PAGE) madvise(base, length, MADV_HUGEPAGE);
#endif
  r->base = base;
  r->length = length;
  napi_value sab = ro_unaccounted_window(env, base, length, release_region, r);
  if (sab == NULL) {
    release_region(r);
    napi_throw_error(env, "RO_NOMEM", "cannot wrap an anonymous mapping");
    return NULL;
  }
  return sab;
}

int ro_register_anon(napi_env env, napi_value exports) {
  return ro_set_function(env, exports, "anonBuffer", anon_buffer_fn);
}
