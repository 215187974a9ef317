/*
 * Streaming I/O that leaves the page cache to the live version's hot set.
 *
 * A fetch writes a whole new version (as large as the live one) and verify reads it twice;
 * through the page cache that is gigabytes of pages touched once, and on a node whose RAM is
 * smaller than its data they push the live version's hot pages out. The writer starts the
 * writeback of each window as soon as it is written and, one window later, waits for it and
 * drops it (the pattern of `dd oflag=nocache`); a reader drops each window once read. Direct
 * I/O would avoid the cache too, but needs aligned buffers and sizes through every layer and
 * gives up the kernel's write merging.
 *
 * writeBehind(fd, startOffset, startLength, dropOffset, dropLength) -> Promise<number>
 *   on the libuv pool: sync_file_range(WRITE) over [startOffset, +startLength) (starts the
 *   writeback, does not wait), then, when dropLength > 0, sync_file_range(WAIT_BEFORE | WRITE
 *   | WAIT_AFTER) and posix_fadvise(DONTNEED) over [dropOffset, +dropLength). Resolves to 0
 *   or the errno of the first call that failed (the data is still written: only the cache
 *   advice failed, and the caller's fsync stays what makes the file durable).
 * dropRange(fd, offset, length) -> number
 *   posix_fadvise(DONTNEED) over a range already read (clean pages: no I/O, returns at
 *   once; length 0: to the end of the file); 0 or the errno. The kernel drops only the
 *   pages the range covers whole.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "napi-util.h"

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  int fd;
  int64_t start_off, start_len, drop_off, drop_len;
  int err;
} behind_job;

#ifdef SYNC_FILE_RANGE_WRITE
static int start_writeback(int fd, int64_t off, int64_t len) {
  return sync_file_range(fd, off, len, SYNC_FILE_RANGE_WRITE) == 0 ? 0 : errno;
}
static int wait_writeback(int fd, int64_t off, int64_t len) {
  return sync_file_range(fd, off, len, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) == 0 ? 0 : errno;
}
#else
/* Without sync_file_range (not Linux): fdatasync makes the pages clean, so DONTNEED drops them. */
static int start_writeback(int fd, int64_t off, int64_t len) {
  (void)fd, (void)off, (void)len;
  return 0;
}
static int wait_writeback(int fd, int64_t off, int64_t len) {
  (void)off, (void)len;
  return fdatasync(fd) == 0 ? 0 : errno;
}
#endif

static int drop(int fd, int64_t off, int64_t len) {
#ifdef POSIX_FADV_DONTNEED
  return posix_fadvise(fd, off, len, POSIX_FADV_DONTNEED);
#else
  (void)fd, (void)off, (void)len;
  return ENOSYS;
#endif
}

static void behind_execute(napi_env env, void *data) {
  (void)env;
  behind_job *job = data;
  int err = job->start_len > 0 ? start_writeback(job->fd, job->start_off, job->start_len) : 0;
  if (job->drop_len > 0) {
    int e = wait_writeback(job->fd, job->drop_off, job->drop_len);
    if (e == 0) e = drop(job->fd, job->drop_off, job->drop_len);
    if (err == 0) err = e;
  }
  job->err = err;
}

static void behind_complete(napi_env env, napi_status status, void *data) {
  behind_job *job = data;
  napi_value result;
  napi_create_int32(env, status == napi_ok ? job->err : ECANCELED, &result);
  napi_resolve_deferred(env, job->deferred, result);
  napi_delete_async_work(env, job->work);
  free(job);
}

static int get_range(napi_env env, napi_value off, napi_value len, int64_t *o, int64_t *l) {
  return napi_get_value_int64(env, off, o) == napi_ok && napi_get_value_int64(env, len, l) == napi_ok && *o >= 0 && *l >= 0 ? 0 : -1;
}

static napi_value write_behind_fn(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 5)
    return ro_throw_type(env, "writeBehind(fd, startOffset, startLength, dropOffset, dropLength)");
  behind_job *job = calloc(1, sizeof *job);
  if (job == NULL) return ro_throw_type(env, "writeBehind: out of memory");
  if (napi_get_value_int32(env, argv[0], &job->fd) != napi_ok || job->fd < 0 ||
      get_range(env, argv[1], argv[2], &job->start_off, &job->start_len) != 0 ||
      get_range(env, argv[3], argv[4], &job->drop_off, &job->drop_len) != 0) {
    free(job);
    return ro_throw_type(env, "writeBehind: fd and the ranges must be non-negative integers");
  }
  napi_value promise, resource;
  if (napi_create_promise(env, &job->deferred, &promise) != napi_ok ||
      napi_create_string_utf8(env, "rostore.writeBehind", NAPI_AUTO_LENGTH, &resource) != napi_ok ||
      napi_create_async_work(env, NULL, resource, behind_execute, behind_complete, job, &job->work) != napi_ok ||
      napi_queue_async_work(env, job->work) != napi_ok) {
    free(job);
    return ro_throw_type(env, "writeBehind: cannot queue the work");
  }
  return promise;
}

static napi_value drop_range_fn(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], result;
  int32_t fd;
  int64_t off, len;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3 || napi_get_value_int32(env, argv[0], &fd) != napi_ok ||
      fd < 0 || get_range(env, argv[1], argv[2], &off, &len) != 0)
    return ro_throw_type(env, "dropRange(fd, offset, length): non-negative integers");
  if (napi_create_int32(env, drop(fd, off, len), &result) != napi_ok) return NULL;
  return result;
}

int ro_register_drop_behind(napi_env env, napi_value exports) {
  if (ro_set_function(env, exports, "writeBehind", write_behind_fn) != 0) return -1;
  return ro_set_function(env, exports, "dropRange", drop_range_fn);
}
