/*
 * The residency functions (residency.h) for JavaScript:
 *
 *   adviseRandom(windows) -> 0 | errno                  madvise(MADV_RANDOM), at once
 *   refreshResidency(windows, vec) -> Promise<number>   mincore into vec; resident pages
 *   lockPages(windows) -> Promise<number>               mlock; 0 or errno
 *   warmRecords(files, ranges, count) -> Promise<number>
 *       files: [[windows, vec], ...]; ranges: Float64Array of (file, offset, length) x count.
 *       The reads of every record started at once (ro_start_reads), then each record
 *       populated and marked (ro_warm_record); resolves to the pages that were not marked before.
 *
 * The jobs run on the libuv pool and hold references to the windows and the vector until
 * they complete, so a reader closed meanwhile unmaps nothing a pool thread still reads.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "lookup/index-scan.h"

#include "napi-util.h"
#include "memory/residency.h"

enum { JOB_REFRESH, JOB_LOCK };

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  napi_ref *windows;
  uint32_t window_count;
  napi_ref vec_ref;
  uint8_t *base;
  uint64_t size;
  uint8_t *vec;
  int kind;
  int err;
  uint64_t count;
} residency_job;

static void free_job(napi_env env, residency_job *job) {
  for (uint32_t i = 0; i < job->window_count; i++)
    if (job->windows[i] != NULL) napi_delete_reference(env, job->windows[i]);
  if (job->vec_ref != NULL) napi_delete_reference(env, job->vec_ref);
  free(job->windows);
  free(job);
}

static void execute(napi_env env, void *data) {
  (void)env;
  residency_job *job = data;
  if (job->kind == JOB_REFRESH) job->err = ro_refresh_residency(job->base, job->size, job->vec, &job->count);
  else job->err = ro_lock_pages(job->base, job->size);
}

static void complete(napi_env env, napi_status status, void *data) {
  residency_job *job = data;
  napi_value v;
  if (status != napi_ok) {
    napi_value msg, error;
    napi_create_string_utf8(env, "the residency job was cancelled", NAPI_AUTO_LENGTH, &msg);
    napi_create_error(env, NULL, msg, &error);
    napi_reject_deferred(env, job->deferred, error);
  } else if (job->kind == JOB_REFRESH && job->err != 0) {
    napi_reject_deferred(env, job->deferred, ro_errno_error(env, job->err));
  } else {
    napi_create_double(env, job->kind == JOB_LOCK ? (double)job->err : (double)job->count, &v);
    napi_resolve_deferred(env, job->deferred, v);
  }
  napi_delete_async_work(env, job->work);
  free_job(env, job);
}

/* A job over `windows` and, when `vec` is not NULL, a vector of one byte per page. */
static napi_value queue(napi_env env, int kind, napi_value windows, napi_value vec) {
  uint8_t *base;
  uint64_t size;
  uint32_t count;
  if (ro_get_windows(env, windows, &base, &size, &count) != 0)
    return ro_throw_type(env, "windows must be consecutive ArrayBuffers of one mapping");
  uint8_t *v = NULL;
  size_t vlen = 0;
  if (vec != NULL && (ro_get_bytes(env, vec, &v, &vlen) != 0 || vlen < ro_pages_of(size)))
    return ro_throw_type(env, "vec must be a Uint8Array of one byte per page of the mapping");
  residency_job *job = calloc(1, sizeof *job);
  if (job != NULL) job->windows = calloc(count > 0 ? count : 1, sizeof *job->windows);
  if (job == NULL || job->windows == NULL) {
    free(job);
    return ro_throw_type(env, "out of memory");
  }
  job->kind = kind;
  job->base = base;
  job->size = size;
  job->vec = v;
  job->window_count = count;
  napi_value promise, name;
  if (ro_ref_windows(env, windows, job->windows, count) != 0 || (vec != NULL && napi_create_reference(env, vec, 1, &job->vec_ref) != napi_ok) ||
      napi_create_promise(env, &job->deferred, &promise) != napi_ok ||
      napi_create_string_utf8(env, "rostore.residency", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_async_work(env, NULL, name, execute, complete, job, &job->work) != napi_ok || napi_queue_async_work(env, job->work) != napi_ok) {
    free_job(env, job);
    return ro_throw_type(env, "cannot queue the residency job");
  }
  return promise;
}

static napi_value advise_random_fn(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], result;
  uint8_t *base;
  uint64_t size;
  uint32_t count;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || ro_get_windows(env, argv[0], &base, &size, &count) != 0)
    return ro_throw_type(env, "adviseRandom(windows)");
  napi_create_int32(env, ro_advise_random(base, size), &result);
  return result;
}

static napi_value refresh_fn(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2) return ro_throw_type(env, "refreshResidency(windows, vec)");
  return queue(env, JOB_REFRESH, argv[0], argv[1]);
}

static napi_value lock_fn(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1) return ro_throw_type(env, "lockPages(windows)");
  return queue(env, JOB_LOCK, argv[0], NULL);
}

typedef struct {
  uint8_t *base;
  uint64_t size;
  uint8_t *vec;
} batch_file;

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  napi_ref *refs;
  uint32_t ref_count;
  batch_file *files;
  uint32_t file_count;
  double *ranges; /* copied: the caller may reuse its array */
  uint32_t count;
  uint64_t fresh;
} batch_job;

static void free_batch(napi_env env, batch_job *job) {
  for (uint32_t i = 0; i < job->ref_count; i++)
    if (job->refs[i] != NULL) napi_delete_reference(env, job->refs[i]);
  free(job->refs);
  free(job->files);
  free(job->ranges);
  free(job);
}

static void batch_execute(napi_env env, void *data) {
  (void)env;
  batch_job *job = data;
  uint64_t page = ro_page_size();
  struct iovec *iov = malloc((size_t)job->count * sizeof *iov);
  uint32_t n = 0;
  for (uint32_t i = 0; iov != NULL && i < job->count; i++) {
    const batch_file *f = &job->files[(uint32_t)job->ranges[3 * i]];
    uint64_t off = (uint64_t)job->ranges[3 * i + 1], len = (uint64_t)job->ranges[3 * i + 2];
    if (f->base == NULL || off >= f->size) continue;
    uint64_t end = off + (len > RO_RECORD_HEADER_SIZE ? len : RO_RECORD_HEADER_SIZE);
    if (end > f->size) end = f->size;
    uint64_t start = off / page * page;
    iov[n].iov_base = f->base + start;
    iov[n].iov_len = (size_t)(end - start);
    n++;
  }
  if (iov != NULL) ro_start_reads(iov, n);
  free(iov);
  for (uint32_t i = 0; i < job->count; i++) {
    const batch_file *f = &job->files[(uint32_t)job->ranges[3 * i]];
    job->fresh += ro_warm_record(f->base, f->size, f->vec, (uint64_t)job->ranges[3 * i + 1], (uint64_t)job->ranges[3 * i + 2]);
  }
}

static void batch_complete(napi_env env, napi_status status, void *data) {
  batch_job *job = data;
  napi_value v;
  if (status != napi_ok) {
    napi_value msg, error;
    napi_create_string_utf8(env, "warmRecords was cancelled", NAPI_AUTO_LENGTH, &msg);
    napi_create_error(env, NULL, msg, &error);
    napi_reject_deferred(env, job->deferred, error);
  } else {
    napi_create_double(env, (double)job->fresh, &v);
    napi_resolve_deferred(env, job->deferred, v);
  }
  napi_delete_async_work(env, job->work);
  free_batch(env, job);
}

static napi_value warm_records_fn(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  uint32_t file_count, count;
  double *ranges;
  size_t ranges_len;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3 || napi_get_array_length(env, argv[0], &file_count) != napi_ok ||
      ro_get_f64_array(env, argv[1], &ranges, &ranges_len) != 0 || napi_get_value_uint32(env, argv[2], &count) != napi_ok ||
      (size_t)count * 3 > ranges_len || file_count == 0)
    return ro_throw_type(env, "warmRecords(files: [windows, vec][], ranges: Float64Array, count)");
  batch_job *job = calloc(1, sizeof *job);
  if (job == NULL) return ro_throw_type(env, "out of memory");
  job->files = calloc(file_count, sizeof *job->files);
  job->ranges = malloc((size_t)count * 3 * sizeof(double) + 1);
  job->file_count = file_count;
  job->count = count;
  uint32_t refs = file_count; /* one per vector, plus the windows counted below */
  int ok = job->files != NULL && job->ranges != NULL;
  for (uint32_t i = 0; ok && i < file_count; i++) {
    napi_value pair, windows, vec;
    uint32_t windows_count = 0;
    ok = napi_get_element(env, argv[0], i, &pair) == napi_ok && napi_get_element(env, pair, 0, &windows) == napi_ok &&
         napi_get_array_length(env, windows, &windows_count) == napi_ok;
    refs += windows_count;
    (void)vec;
  }
  if (ok) job->refs = calloc(refs > 0 ? refs : 1, sizeof *job->refs);
  ok = ok && job->refs != NULL;
  job->ref_count = refs;
  uint32_t next = 0;
  for (uint32_t i = 0; ok && i < file_count; i++) {
    napi_value pair, windows, vec;
    uint32_t windows_count;
    size_t vlen;
    batch_file *f = &job->files[i];
    ok = napi_get_element(env, argv[0], i, &pair) == napi_ok && napi_get_element(env, pair, 0, &windows) == napi_ok &&
         napi_get_element(env, pair, 1, &vec) == napi_ok && ro_get_windows(env, windows, &f->base, &f->size, &windows_count) == 0 &&
         ro_get_bytes(env, vec, &f->vec, &vlen) == 0 && vlen >= ro_pages_of(f->size) && ro_ref_windows(env, windows, job->refs + next, windows_count) == 0 &&
         napi_create_reference(env, vec, 1, &job->refs[next + windows_count]) == napi_ok;
    next += windows_count + 1;
  }
  for (uint32_t i = 0; ok && i < count; i++) {
    double file = ranges[3 * i], off = ranges[3 * i + 1], len = ranges[3 * i + 2];
    ok = file >= 0 && file < file_count && off >= 0 && off <= 9007199254740991.0 && len >= 0 && len <= 9007199254740991.0;
  }
  if (!ok) {
    free_batch(env, job);
    return ro_throw_type(env, "warmRecords: files must be [windows, vec] pairs (one vec byte per page) and ranges name them");
  }
  memcpy(job->ranges, ranges, (size_t)count * 3 * sizeof(double));
  napi_value promise, name;
  if (napi_create_promise(env, &job->deferred, &promise) != napi_ok ||
      napi_create_string_utf8(env, "rostore.warmRecords", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_async_work(env, NULL, name, batch_execute, batch_complete, job, &job->work) != napi_ok ||
      napi_queue_async_work(env, job->work) != napi_ok) {
    free_batch(env, job);
    return ro_throw_type(env, "cannot queue warmRecords");
  }
  return promise;
}

int ro_register_residency(napi_env env, napi_value exports) {
  if (ro_set_function(env, exports, "warmRecords", warm_records_fn) != 0) return -1;
  if (ro_set_function(env, exports, "adviseRandom", advise_random_fn) != 0) return -1;
  if (ro_set_function(env, exports, "refreshResidency", refresh_fn) != 0) return -1;
  return ro_set_function(env, exports, "lockPages", lock_fn);
}
