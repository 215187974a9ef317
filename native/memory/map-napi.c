/*
 * mapFile(path, privateWritable, windowBytes): Promise<{ size, windows }>.
 *
 * open + fstat + mmap run on the libuv pool. The mapping is handed to JavaScript as
 * consecutive external ArrayBuffers ("windows") of at most `windowBytes` bytes, because
 * one ArrayBuffer cannot exceed buffer.constants.MAX_LENGTH. Every window holds one
 * count on the mapping; a window's finalizer drops it, and the last one unmaps. So the
 * memory stays mapped exactly as long as JavaScript can reach any view of it, whatever
 * the reader's close() did, and even after the files were deleted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "memory/mapping.h"
#include "napi-util.h"
#include "memory/unaccounted-window.h"

typedef struct {
  ro_mapping map;
  uint32_t refs; /* windows alive, plus one while they are being created; atomic */
} shared_map;

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  char *path;
  int private_writable;
  uint64_t window;
  ro_mapping map;
  int err;
} map_job;

static void release(void *ctx) {
  shared_map *m = ctx;
  if (__atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    ro_unmap(&m->map);
    free(m);
  }
}

static void map_execute(napi_env env, void *data) {
  (void)env;
  map_job *job = data;
  job->err = ro_map_file(job->path, job->private_writable, &job->map);
}

/* Builds { size, windows } from the job's mapping; on failure unmaps and returns NULL. */
static napi_value windows_of(napi_env env, map_job *job) {
  shared_map *m = malloc(sizeof *m);
  if (m == NULL) {
    ro_unmap(&job->map);
    return NULL;
  }
  m->map = job->map;
  m->refs = 1;
  napi_value result, windows, size;
  int ok = napi_create_object(env, &result) == napi_ok && napi_create_array(env, &windows) == napi_ok &&
           napi_create_double(env, (double)m->map.size, &size) == napi_ok;
  uint32_t k = 0;
  for (uint64_t at = 0; ok && at < m->map.size; at += job->window, k++) {
    uint64_t len = m->map.size - at < job->window ? m->map.size - at : job->window;
    __atomic_add_fetch(&m->refs, 1, __ATOMIC_RELAXED); /* before its deleter can run */
    napi_value ab = ro_unaccounted_window(env, m->map.base + at, (size_t)len, release, m);
    if (ab == NULL) release(m);
    ok = ab != NULL && napi_set_element(env, windows, k, ab) == napi_ok;
  }
  ok = ok && napi_set_named_property(env, result, "size", size) == napi_ok &&
       napi_set_named_property(env, result, "windows", windows) == napi_ok;
  release(m); /* the windows created so far keep it; none: it is unmapped here */
  return ok ? result : NULL;
}

static void map_complete(napi_env env, napi_status status, void *data) {
  map_job *job = data;
  napi_value value = NULL;
  if (job->err == 0) {
    /* windows_of owns the mapping from here on, also when it fails. */
    if (status == napi_ok) value = windows_of(env, job);
    else ro_unmap(&job->map);
  }
  if (value != NULL) {
    napi_resolve_deferred(env, job->deferred, value);
  } else {
    napi_reject_deferred(env, job->deferred, ro_errno_error(env, job->err != 0 ? job->err : ENOMEM));
  }
  napi_delete_async_work(env, job->work);
  free(job->path);
  free(job);
}

static napi_value map_file_fn(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  bool writable;
  double window;
  char *path;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3)
    return ro_throw_type(env, "mapFile(path, privateWritable, windowBytes)");
  int got = ro_get_string(env, argv[0], &path);
  if (got != 0)
    return ro_throw_type(env, got == RO_STRING_NOT_STRING ? "mapFile: path must be a string"
                              : got == RO_STRING_HAS_NUL  ? "mapFile: path contains a NUL byte"
                                                          : "mapFile: out of memory");
  const char *bad = NULL;
  if (napi_get_value_bool(env, argv[1], &writable) != napi_ok) bad = "mapFile: privateWritable must be a boolean";
  else if (napi_get_value_double(env, argv[2], &window) != napi_ok || !(window >= 65536 && window <= 9007199254740991.0) ||
           ((uint64_t)window & ((uint64_t)window - 1)) != 0)
    bad = "mapFile: windowBytes must be a power of two >= 65536";
  map_job *job = bad == NULL ? calloc(1, sizeof *job) : NULL;
  if (job == NULL) {
    free(path);
    return ro_throw_type(env, bad != NULL ? bad : "mapFile: out of memory");
  }
  job->path = path;
  job->private_writable = writable;
  job->window = (uint64_t)window;
  napi_value promise, name;
  if (napi_create_promise(env, &job->deferred, &promise) != napi_ok ||
      napi_create_string_utf8(env, "rostore.mapFile", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_async_work(env, NULL, name, map_execute, map_complete, job, &job->work) != napi_ok ||
      napi_queue_async_work(env, job->work) != napi_ok) {
    free(job->path);
    free(job);
    return ro_throw_type(env, "mapFile: cannot queue the work");
  }
  return promise;
}

int ro_register_map(napi_env env, napi_value exports) {
  if (ro_set_function(env, exports, "mapFile", map_file_fn) != 0) return -1;
  return ro_set_function(env, exports, "releaseMappings", ro_release_mappings_fn);
}
