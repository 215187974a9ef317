/*
 * The O(records) work of opening a chunk, on the libuv pool so the event loop never
 * waits for it (nor for the page faults of a cold file):
 *
 *   scanIndex(windows, entries, dataSize, radix, radixBits, checksum, willNeed)
 *     -> Promise<{ status, entry, checksum }>   order/offset checks (index-scan.c), the
 *        radix table filled in place, and the XXH64 of the whole file when asked
 *   prefetch(windows) -> Promise<number>        madvise(WILLNEED), then one read per page
 *   mapResident(windows) -> Promise<number>     maps the pages already cached (mapping.h); resolves to their count
 *
 * The job holds references to every ArrayBuffer it reads or writes until it completes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "lookup/index-scan.h"
#include "memory/mapping.h"
#include "napi-util.h"
#include "hash/xxh64.h"

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  napi_ref *refs;
  uint32_t ref_count;
  uint8_t *base;
  uint64_t size;
  /* scanIndex */
  uint64_t entries;
  uint64_t data_size;
  uint32_t *radix;
  int radix_bits;
  int checksum;
  int will_need;
  uint32_t *block_crcs; /* NULL: not asked */
  int status;
  uint64_t bad_entry;
  uint64_t xxh;
  /* prefetch (bytes covered) and mapResident (pages mapped) */
  uint64_t count;
} scan_job;

static void free_job(napi_env env, scan_job *job) {
  for (uint32_t i = 0; i < job->ref_count; i++)
    if (job->refs[i] != NULL) napi_delete_reference(env, job->refs[i]);
  free(job->refs);
  free(job);
}

static void scan_execute(napi_env env, void *data) {
  (void)env;
  scan_job *job = data;
  if (job->will_need) ro_advise_willneed(job->base, job->size);
  if (job->checksum) job->xxh = ro_xxh64(job->base, (size_t)job->size, 0);
  job->status = ro_scan_index(job->base + RO_HEADER_SIZE, job->entries, job->data_size, job->radix, job->radix_bits, &job->bad_entry);
  if (job->block_crcs != NULL) ro_index_block_crcs(job->base, job->size, job->block_crcs);
}

static void scan_complete(napi_env env, napi_status status, void *data) {
  scan_job *job = data;
  napi_value result, v;
  if (status != napi_ok) {
    napi_value msg, error;
    napi_create_string_utf8(env, "scanIndex was cancelled", NAPI_AUTO_LENGTH, &msg);
    napi_create_error(env, NULL, msg, &error);
    napi_reject_deferred(env, job->deferred, error);
  } else {
    char hex[17] = "";
    if (job->checksum) snprintf(hex, sizeof hex, "%016" PRIx64, job->xxh);
    napi_create_object(env, &result);
    napi_create_int32(env, job->status, &v);
    napi_set_named_property(env, result, "status", v);
    napi_create_double(env, (double)job->bad_entry, &v);
    napi_set_named_property(env, result, "entry", v);
    napi_create_string_utf8(env, hex, NAPI_AUTO_LENGTH, &v);
    napi_set_named_property(env, result, "checksum", v);
    napi_resolve_deferred(env, job->deferred, result);
  }
  napi_delete_async_work(env, job->work);
  free_job(env, job);
}

static void prefetch_execute(napi_env env, void *data) {
  (void)env;
  scan_job *job = data;
  ro_advise_willneed(job->base, job->size);
  (void)ro_touch_pages(job->base, job->size); /* its reads are volatile: nothing to keep */
  job->count = job->size;
}

static void map_resident_execute(napi_env env, void *data) {
  (void)env;
  scan_job *job = data;
  job->count = ro_map_resident(job->base, job->size);
}

/* prefetch and mapResident: resolves to the job's count (bytes covered, pages mapped). */
static void count_complete(napi_env env, napi_status status, void *data) {
  scan_job *job = data;
  napi_value v;
  napi_create_double(env, status == napi_ok ? (double)job->count : 0, &v);
  napi_resolve_deferred(env, job->deferred, v);
  napi_delete_async_work(env, job->work);
  free_job(env, job);
}

/* A job over `windows` plus up to two extra objects to keep alive; NULL after a throw. */
static scan_job *new_job(napi_env env, napi_value windows, napi_value extra, napi_value extra2) {
  uint8_t *base;
  uint64_t total;
  uint32_t count;
  if (ro_get_windows(env, windows, &base, &total, &count) != 0) {
    ro_throw_type(env, "windows must be consecutive ArrayBuffers of one mapping");
    return NULL;
  }
  scan_job *job = calloc(1, sizeof *job);
  napi_ref *refs = calloc((size_t)count + 2, sizeof *refs);
  if (job == NULL || refs == NULL) {
    free(job);
    free(refs);
    ro_throw_type(env, "out of memory");
    return NULL;
  }
  job->refs = refs;
  job->ref_count = count + 2;
  job->base = base;
  job->size = total;
  if (ro_ref_windows(env, windows, refs, count) != 0 || (extra != NULL && napi_create_reference(env, extra, 1, &refs[count]) != napi_ok) ||
      (extra2 != NULL && napi_create_reference(env, extra2, 1, &refs[count + 1]) != napi_ok)) {
    free_job(env, job);
    ro_throw_type(env, "cannot reference the windows");
    return NULL;
  }
  return job;
}

static napi_value queue(napi_env env, scan_job *job, const char *name, napi_async_execute_callback exec, napi_async_complete_callback done) {
  napi_value promise, resource_name;
  if (napi_create_promise(env, &job->deferred, &promise) != napi_ok ||
      napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &resource_name) != napi_ok ||
      napi_create_async_work(env, NULL, resource_name, exec, done, job, &job->work) != napi_ok ||
      napi_queue_async_work(env, job->work) != napi_ok) {
    free_job(env, job);
    return ro_throw_type(env, "cannot queue the work");
  }
  return promise;
}

static napi_value scan_index_fn(napi_env env, napi_callback_info info) {
  size_t argc = 8;
  napi_value argv[8];
  double entries, data_size;
  int32_t bits = 0;
  bool checksum, will_need;
  napi_valuetype radix_type;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 7)
    return ro_throw_type(env, "scanIndex(windows, entries, dataSize, radix, radixBits, checksum, willNeed, blockCrcs?)");
  if (napi_get_value_double(env, argv[1], &entries) != napi_ok || !(entries >= 0 && entries <= 9007199254740991.0) ||
      napi_get_value_double(env, argv[2], &data_size) != napi_ok || !(data_size >= 0 && data_size <= 9007199254740991.0) ||
      napi_get_value_int32(env, argv[4], &bits) != napi_ok || napi_get_value_bool(env, argv[5], &checksum) != napi_ok ||
      napi_get_value_bool(env, argv[6], &will_need) != napi_ok || napi_typeof(env, argv[3], &radix_type) != napi_ok)
    return ro_throw_type(env, "scanIndex: bad arguments");
  uint32_t *radix = NULL;
  size_t radix_len = 0;
  if (radix_type != napi_null) {
    if (ro_get_u32_array(env, argv[3], &radix, &radix_len) != 0 || bits < 1 || bits > 24 || radix_len != ((size_t)1 << bits) + 1 ||
        entries > 4294967295.0)
      return ro_throw_type(env, "scanIndex: radix must be a Uint32Array of 2^radixBits + 1 (1..24 bits)");
  }
  uint32_t *crcs = NULL;
  size_t crcs_len = 0;
  napi_valuetype crcs_type = napi_undefined;
  if (argc > 7 && napi_typeof(env, argv[7], &crcs_type) == napi_ok && crcs_type != napi_null && crcs_type != napi_undefined &&
      ro_get_u32_array(env, argv[7], &crcs, &crcs_len) != 0)
    return ro_throw_type(env, "scanIndex: blockCrcs must be a Uint32Array");
  scan_job *job = new_job(env, argv[0], radix_type != napi_null ? argv[3] : NULL, crcs != NULL ? argv[7] : NULL);
  if (job == NULL) return NULL;
  if (crcs != NULL && crcs_len < (job->size + RO_INDEX_BLOCK - 1) / RO_INDEX_BLOCK) {
    free_job(env, job);
    return ro_throw_type(env, "scanIndex: blockCrcs needs one entry per 4096 bytes of the index");
  }
  job->block_crcs = crcs;
  if (job->size < RO_HEADER_SIZE || (job->size - RO_HEADER_SIZE) / RO_ENTRY_SIZE < (uint64_t)entries) {
    free_job(env, job);
    return ro_throw_type(env, "scanIndex: the windows are shorter than the entries");
  }
  job->entries = (uint64_t)entries;
  job->data_size = (uint64_t)data_size;
  job->radix = radix;
  job->radix_bits = bits;
  job->checksum = checksum;
  job->will_need = will_need;
  return queue(env, job, "rostore.scanIndex", scan_execute, scan_complete);
}

/* A job over its one argument, `windows`, counted by count_complete. */
static napi_value windows_job(napi_env env, napi_callback_info info, const char *usage, const char *name, napi_async_execute_callback exec) {
  size_t argc = 1;
  napi_value argv[1];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1) return ro_throw_type(env, usage);
  scan_job *job = new_job(env, argv[0], NULL, NULL);
  if (job == NULL) return NULL;
  return queue(env, job, name, exec, count_complete);
}

static napi_value prefetch_fn(napi_env env, napi_callback_info info) {
  return windows_job(env, info, "prefetch(windows)", "rostore.prefetch", prefetch_execute);
}

static napi_value map_resident_fn(napi_env env, napi_callback_info info) {
  return windows_job(env, info, "mapResident(windows)", "rostore.mapResident", map_resident_execute);
}

int ro_register_scan(napi_env env, napi_value exports) {
  if (ro_set_function(env, exports, "scanIndex", scan_index_fn) != 0) return -1;
  if (ro_set_function(env, exports, "mapResident", map_resident_fn) != 0) return -1;
  return ro_set_function(env, exports, "prefetch", prefetch_fn);
}
