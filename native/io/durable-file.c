/*
 * writeFileDurably(dir, tmpName, name, bytes, stopAfter) -> Promise<void>
 *
 * The crash-safe replacement of a small file (a store's LIVE pointer, STALE mark, push
 * record: swapper/live-pointer.ts) as one job on the libuv pool: create dir/tmpName
 * (O_EXCL), write the bytes, fsync, close, rename it over dir/name, fsync the directory.
 * Done from JavaScript that is eight file-system calls, each a round trip through the pool
 * (two thread wake-ups apiece); a swap spent ~20 of its ~31 context switches there.
 *
 * stopAfter: 0 every step; 1 stop once the temp file is written, synced and closed; 2 stop
 * after the rename (the crash-recovery tests kill the process at those points). On failure
 * a temp file this job created and did not rename is removed, and the promise rejects with
 * an Error whose `code` is the errno name and whose `syscall` names the failed step.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "napi-util.h"

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  char *dir;
  char *tmp;
  char *name;
  uint8_t *bytes;
  size_t len;
  int stop_after;
  int err;
  const char *step;
} durable_job;

static void free_job(durable_job *job) {
  free(job->dir);
  free(job->tmp);
  free(job->name);
  free(job->bytes);
  free(job);
}

static int fail(durable_job *job, const char *step) {
  job->err = errno != 0 ? errno : EIO;
  job->step = step;
  return -1;
}

static int write_all(int fd, const uint8_t *p, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Writes, syncs and closes the temp file; removes it when any of that fails. */
static int write_temp(durable_job *job, int dirfd) {
  int fd = openat(dirfd, job->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return fail(job, "open");
  const char *step = NULL;
  if (write_all(fd, job->bytes, job->len) != 0) step = "write";
  else if (fsync(fd) != 0) step = "fsync";
  if (step != NULL) {
    fail(job, step);
    close(fd);
  } else if (close(fd) != 0) {
    step = "close";
    fail(job, step);
  }
  if (step == NULL) return 0;
  unlinkat(dirfd, job->tmp, 0);
  return -1;
}

static void durable_execute(napi_env env, void *data) {
  (void)env;
  durable_job *job = data;
  errno = 0;
  int dirfd = open(job->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) {
    fail(job, "opendir");
    return;
  }
  if (write_temp(job, dirfd) != 0 || job->stop_after == 1) {
    close(dirfd);
    return;
  }
  if (renameat(dirfd, job->tmp, dirfd, job->name) != 0) {
    fail(job, "rename");
    unlinkat(dirfd, job->tmp, 0);
  } else if (job->stop_after != 2 && fsync(dirfd) != 0) {
    fail(job, "fsync");
  }
  close(dirfd);
}

static void durable_complete(napi_env env, napi_status status, void *data) {
  durable_job *job = data;
  if (status == napi_ok && job->err == 0) {
    napi_value undefined;
    napi_get_undefined(env, &undefined);
    napi_resolve_deferred(env, job->deferred, undefined);
  } else {
    napi_value error = ro_errno_error(env, status == napi_ok ? job->err : ECANCELED), syscall;
    napi_create_string_utf8(env, job->step != NULL ? job->step : "queue", NAPI_AUTO_LENGTH, &syscall);
    napi_set_named_property(env, error, "syscall", syscall);
    napi_reject_deferred(env, job->deferred, error);
  }
  napi_delete_async_work(env, job->work);
  free_job(job);
}

/* A file name inside the directory: not empty, no slash, not "." or "..". */
static int is_plain_name(const char *s) {
  return s[0] != '\0' && strchr(s, '/') == NULL && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

static napi_value write_file_durably_fn(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  int32_t stop_after;
  uint8_t *bytes;
  size_t len;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 5)
    return ro_throw_type(env, "writeFileDurably(dir, tmpName, name, bytes, stopAfter)");
  if (ro_get_bytes(env, argv[3], &bytes, &len) != 0) return ro_throw_type(env, "writeFileDurably: bytes must be a Uint8Array");
  if (napi_get_value_int32(env, argv[4], &stop_after) != napi_ok || stop_after < 0 || stop_after > 2)
    return ro_throw_type(env, "writeFileDurably: stopAfter must be 0, 1 or 2");
  durable_job *job = calloc(1, sizeof *job);
  if (job == NULL) return ro_throw_type(env, "writeFileDurably: out of memory");
  /* Any failure leaves the field NULL, refused below. */
  ro_get_string(env, argv[0], &job->dir);
  ro_get_string(env, argv[1], &job->tmp);
  ro_get_string(env, argv[2], &job->name);
  /* A copy: the job runs on another thread while JavaScript may change or drop the array. */
  job->bytes = malloc(len > 0 ? len : 1);
  if (job->dir == NULL || job->tmp == NULL || job->name == NULL || job->bytes == NULL || job->dir[0] == '\0' ||
      !is_plain_name(job->tmp) || !is_plain_name(job->name) || strcmp(job->tmp, job->name) == 0) {
    free_job(job);
    return ro_throw_type(env, "writeFileDurably: dir must be a path, tmpName and name two different plain file names");
  }
  memcpy(job->bytes, bytes, len);
  job->len = len;
  job->stop_after = stop_after;
  napi_value promise, resource;
  if (napi_create_promise(env, &job->deferred, &promise) != napi_ok ||
      napi_create_string_utf8(env, "rostore.writeFileDurably", NAPI_AUTO_LENGTH, &resource) != napi_ok ||
      napi_create_async_work(env, NULL, resource, durable_execute, durable_complete, job, &job->work) != napi_ok ||
      napi_queue_async_work(env, job->work) != napi_ok) {
    free_job(job);
    return ro_throw_type(env, "writeFileDurably: cannot queue the work");
  }
  return promise;
}

int ro_register_durable(napi_env env, napi_value exports) {
  return ro_set_function(env, exports, "writeFileDurably", write_file_durably_fn);
}
