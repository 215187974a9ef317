/*
 * The io_uring cold reads for JavaScript (uring-reads.h has the state and the engine):
 *
 *   uringProbe() -> 0 | errno                 sets up this thread's ring if not yet; why not
 *   openRandom(path) -> fd | -errno           a data file opened for reads, POSIX_FADV_RANDOM
 *   readRecords(files, ranges, count) -> Promise<number>     see uring-reads.c
 *   preadRing(fd, buf, position) -> Promise<number>          pread(2) through the ring: the bytes
 *                                                            read (rejects with the errno's error)
 *
 * The state is the data pointer of the functions (one per environment: worker threads have
 * their own); an async cleanup hook drains the ring and closes its handle when the
 * environment goes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "io/uring-reads.h"
#include "memory/residency.h"

static napi_value read_records_fn(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  void *data;
  uint32_t file_count, count;
  double *ranges;
  size_t ranges_len;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, &data) != napi_ok || argc < 3 || napi_get_array_length(env, argv[0], &file_count) != napi_ok ||
      ro_get_f64_array(env, argv[1], &ranges, &ranges_len) != 0 || napi_get_value_uint32(env, argv[2], &count) != napi_ok ||
      (size_t)count * 3 > ranges_len || file_count == 0)
    return ro_throw_type(env, "readRecords(files: [fd, vec, size][], ranges: Float64Array, count)");
  rr_state *s = data;
  if (rr_ensure_ring(s) != 0) return ro_throw_type(env, "readRecords: no io_uring (uringProbe says why)");
  rr_job *job = calloc(1, sizeof *job);
  if (job == NULL) return ro_throw_type(env, "out of memory");
  job->files = calloc(file_count, sizeof *job->files);
  job->refs = calloc(file_count, sizeof *job->refs);
  job->ops = calloc(count > 0 ? count : 1, sizeof *job->ops);
  job->ref_count = file_count;
  int ok = job->files != NULL && job->refs != NULL && job->ops != NULL;
  /* Only the files the ranges name are looked at: a store has many, a batch reads a few. */
  for (uint32_t r = 0; ok && r < count; r++) {
    double file = ranges[3 * r], off = ranges[3 * r + 1], len = ranges[3 * r + 2];
    ok = file >= 0 && file < file_count && off >= 0 && off <= 9007199254740991.0 && len >= 0 && len <= 9007199254740991.0;
    uint32_t i = ok ? (uint32_t)file : 0;
    if (!ok || job->refs[i] != NULL) continue;
    napi_value triple, fd, vec, size;
    int32_t fdv;
    double sizev;
    size_t vlen;
    rr_file *f = &job->files[i];
    ok = napi_get_element(env, argv[0], i, &triple) == napi_ok && napi_get_element(env, triple, 0, &fd) == napi_ok &&
         napi_get_element(env, triple, 1, &vec) == napi_ok && napi_get_element(env, triple, 2, &size) == napi_ok &&
         napi_get_value_int32(env, fd, &fdv) == napi_ok && napi_get_value_double(env, size, &sizev) == napi_ok && sizev >= 0 &&
         sizev <= 9007199254740991.0 && ro_get_bytes(env, vec, &f->vec, &vlen) == 0 && napi_create_reference(env, vec, 1, &job->refs[i]) == napi_ok;
    if (!ok) break;
    f->fd = fdv;
    f->size = (uint64_t)sizev;
    f->vec_pages = ro_pages_of(f->size) < vlen ? ro_pages_of(f->size) : vlen;
  }
  napi_value promise;
  if (!ok || napi_create_promise(env, &job->deferred, &promise) != napi_ok) {
    rr_job_free(s, job, 1);
    return ro_throw_type(env, "readRecords: files must be [fd, vec, size] triples and ranges name them");
  }
  job->next = s->jobs;
  if (s->jobs != NULL) s->jobs->prev = job;
  s->jobs = job;
  job->count = count;
  uint64_t page = ro_page_size();
  for (uint32_t i = 0; i < count; i++) {
    rr_op *op = &job->ops[i];
    op->job = job;
    op->file = (uint32_t)ranges[3 * i];
    op->rec_off = (uint64_t)ranges[3 * i + 1];
    op->known = ranges[3 * i + 2] > 0;
    op->rec_end = op->rec_off + (uint64_t)ranges[3 * i + 2];
    op->at = op->rec_off / page * page;
    const rr_file *f = &job->files[op->file];
    if (f->fd >= 0 && op->rec_off < f->size && rr_next_read(s, op)) job->pending++;
  }
  if (job->pending == 0) rr_settle(s, job);
  else rr_submit(s);
  return promise;
}

/* preadRing(fd, buf, position): one read of buf.length bytes into buf; the job holds buf. */
static napi_value pread_ring_fn(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], promise;
  void *data;
  int32_t fd;
  double position;
  uint8_t *buf;
  size_t len;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, &data) != napi_ok || argc < 3 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0 ||
      ro_get_bytes(env, argv[1], &buf, &len) != 0 || len > 0x7ffff000 || napi_get_value_double(env, argv[2], &position) != napi_ok ||
      !(position >= 0 && position <= 9007199254740991.0))
    return ro_throw_type(env, "preadRing(fd, buf: Uint8Array, position)");
  rr_state *s = data;
  if (rr_ensure_ring(s) != 0) return ro_throw_type(env, "preadRing: no io_uring (uringProbe says why)");
  rr_job *job = calloc(1, sizeof *job);
  if (job != NULL) {
    job->files = calloc(1, sizeof *job->files);
    job->refs = calloc(1, sizeof *job->refs);
    job->ops = calloc(1, sizeof *job->ops);
  }
  if (job == NULL || job->files == NULL || job->refs == NULL || job->ops == NULL || napi_create_reference(env, argv[1], 1, &job->refs[0]) != napi_ok ||
      napi_create_promise(env, &job->deferred, &promise) != napi_ok) {
    if (job != NULL) {
      job->ref_count = 1;
      rr_job_free(s, job, 1);
    }
    return ro_throw_type(env, "preadRing: out of memory");
  }
  job->ref_count = 1;
  job->count = 1;
  job->files[0].fd = fd;
  job->next = s->jobs;
  if (s->jobs != NULL) s->jobs->prev = job;
  s->jobs = job;
  rr_op *op = &job->ops[0];
  op->job = job;
  op->dst = buf;
  op->known = 1;
  op->rec_off = op->at = (uint64_t)position;
  op->rec_end = op->rec_off + len;
  if (len > 0 && rr_next_read(s, op)) {
    job->pending = 1;
    rr_submit(s);
  } else {
    rr_settle(s, job);
  }
  return promise;
}

static napi_value probe_fn(napi_env env, napi_callback_info info) {
  void *data;
  napi_value v;
  if (napi_get_cb_info(env, info, NULL, NULL, NULL, &data) != napi_ok) return ro_throw_type(env, "uringProbe()");
  napi_create_int32(env, rr_ensure_ring(data), &v);
  return v;
}

static napi_value open_random_fn(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], v;
  char *path = NULL;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || ro_get_string(env, argv[0], &path) != 0)
    return ro_throw_type(env, "openRandom(path)");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  int result = fd >= 0 ? fd : -errno;
  free(path);
  /* No read-ahead: a cold read brings in its record's pages, not the file around them. */
  if (fd >= 0) posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
  napi_create_int32(env, result, &v);
  return v;
}

static void on_closed(uv_handle_t *handle) {
  rr_state *s = handle->data;
  napi_async_cleanup_hook_handle hook = s->hook;
  ro_ring_close(&s->ring);
  close(s->efd);
  if (!s->leak) free(s->scratch);
  free(s);
  napi_remove_async_cleanup_hook(hook);
}

/*
 * The environment is going away (its thread exits): the reads in flight are waited for, since
 * the kernel writes into their buffers until they complete (device latency: bounded), then
 * every job is freed without resolving (no JavaScript runs any more) and the ring closed.
 */
static void teardown(napi_async_cleanup_hook_handle hook, void *data) {
  rr_state *s = data;
  s->hook = hook;
  s->leak = rr_drain(s) != 0;
  if (s->resource != NULL) napi_delete_reference(s->env, s->resource);
  if (s->ctx != NULL) napi_async_destroy(s->env, s->ctx);
  if (s->polling) {
    uv_poll_stop(&s->poll);
    uv_close((uv_handle_t *)&s->poll, on_closed);
    return;
  }
  if (s->efd >= 0) close(s->efd);
  free(s->scratch);
  free(s);
  napi_remove_async_cleanup_hook(hook);
}

int ro_register_uring(napi_env env, napi_value exports) {
  rr_state *s = calloc(1, sizeof *s);
  if (s == NULL) return -1;
  s->env = env;
  s->efd = -1;
  napi_value resource, name, fn;
  if (napi_create_object(env, &resource) != napi_ok || napi_create_reference(env, resource, 1, &s->resource) != napi_ok ||
      napi_create_string_utf8(env, "rostore.readRecords", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_async_init(env, resource, name, &s->ctx) != napi_ok || napi_add_async_cleanup_hook(env, teardown, s, NULL) != napi_ok) {
    free(s);
    return -1;
  }
  if (napi_create_function(env, "readRecords", NAPI_AUTO_LENGTH, read_records_fn, s, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "readRecords", fn) != napi_ok ||
      napi_create_function(env, "uringProbe", NAPI_AUTO_LENGTH, probe_fn, s, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "uringProbe", fn) != napi_ok ||
      napi_create_function(env, "preadRing", NAPI_AUTO_LENGTH, pread_ring_fn, s, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "preadRing", fn) != napi_ok)
    return -1;
  return ro_set_function(env, exports, "openRandom", open_random_fn);
}
