/*
 * The residency functions (residency.h) for JavaScript:
 *
 *   adviseRandom(windows) -> 0 | errno                  madvise(MADV_RANDOM), at once
 *   refreshResidency(windows, vec) -> Promise<number>   mincore into vec; resident pages
 *   warmRecord(windows, vec, offset, length) -> Promise<number>
 *                                                       the record's pages brought in and
 *                                                       marked; pages that were not marked
 *   lockPages(windows) -> Promise<number>               mlock; 0 or errno
 *
 * The jobs run on the libuv pool and hold references to the windows and the vector until
 * they complete, so a reader closed meanwhile unmaps nothing a pool thread still reads.
 */
#include <stdlib.h>

#include "napi-util.h"
#include "residency.h"

enum { JOB_REFRESH, JOB_WARM, JOB_LOCK };

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  napi_ref *windows;
  uint32_t window_count;
  napi_ref vec_ref;
  uint8_t *base;
  uint64_t size;
  uint8_t *vec;
  uint64_t offset, length;
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
  else if (job->kind == JOB_WARM) job->count = ro_warm_record(job->base, job->size, job->vec, job->offset, job->length);
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
static napi_value queue(napi_env env, int kind, napi_value windows, napi_value vec, uint64_t offset, uint64_t length) {
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
  job->offset = offset;
  job->length = length;
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
  return queue(env, JOB_REFRESH, argv[0], argv[1], 0, 0);
}

static napi_value warm_fn(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  double offset, length;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 4 || napi_get_value_double(env, argv[2], &offset) != napi_ok ||
      napi_get_value_double(env, argv[3], &length) != napi_ok || !(offset >= 0 && offset <= 9007199254740991.0) ||
      !(length >= 0 && length <= 9007199254740991.0))
    return ro_throw_type(env, "warmRecord(windows, vec, offset, length)");
  return queue(env, JOB_WARM, argv[0], argv[1], (uint64_t)offset, (uint64_t)length);
}

static napi_value lock_fn(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1) return ro_throw_type(env, "lockPages(windows)");
  return queue(env, JOB_LOCK, argv[0], NULL, 0, 0);
}

int ro_register_residency(napi_env env, napi_value exports) {
  if (ro_set_function(env, exports, "adviseRandom", advise_random_fn) != 0) return -1;
  if (ro_set_function(env, exports, "refreshResidency", refresh_fn) != 0) return -1;
  if (ro_set_function(env, exports, "warmRecord", warm_fn) != 0) return -1;
  return ro_set_function(env, exports, "lockPages", lock_fn);
}
