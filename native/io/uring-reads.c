/*
 * The cold-read warm-up through the addon's own io_uring, the twin of warmRecords
 * (memory/residency-napi.c) without the pool (the functions are in uring-napi.c):
 *
 *   readRecords(files, ranges, count) -> Promise<number>
 *       files: [[fd, vec, size], ...]; ranges: Float64Array of (file, offset, length) x count.
 *       Buffered reads of each record's pages into a scratch buffer the job owns (the pages
 *       land in the page cache; the mapping is never touched), the pages marked in vec;
 *       resolves to the pages that were not marked before. Length 0: the header is read
 *       first, then the rest of the record.
 *
 * One ring per N-API environment (the data pointer of the functions: no globals), created at
 * the first call. Reads are submitted with one io_uring_enter per call; completions signal an
 * eventfd watched by a uv_poll on the environment's own loop, so they are handled on the JS
 * thread with no pool thread and no wake-up in between. More reads than the ring holds wait
 * in a queue and go as completions free slots.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <uv.h>

#include "io/uring-reads.h"

#include "bytes.h"
#include "lookup/index-scan.h"
#include "memory/residency.h"

/* Ring slots: the reads one thread keeps in flight (a serving process has one ring per loop). */
#define RING_ENTRIES 64
/* The largest single read: a longer record is read in several. */
#define MAX_READ ((uint64_t)64 * 1024)

void rr_job_free(rr_state *s, rr_job *job, int delete_refs) {
  if (job->prev != NULL) job->prev->next = job->next;
  else if (s->jobs == job) s->jobs = job->next;
  if (job->next != NULL) job->next->prev = job->prev;
  for (uint32_t i = 0; delete_refs && i < job->ref_count; i++)
    if (job->refs[i] != NULL) napi_delete_reference(s->env, job->refs[i]);
  for (uint32_t i = 0; job->ops != NULL && i < job->count; i++) free(job->ops[i].buf);
  free(job->refs);
  free(job->files);
  free(job->ops);
  free(job);
}

static void on_poll(uv_poll_t *handle, int status, int events);

int rr_ensure_ring(rr_state *s) {
  if (s->tried) return s->err;
  s->tried = 1;
  s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (s->efd < 0) return s->err = errno;
  s->scratch = malloc((size_t)MAX_READ);
  s->err = s->scratch == NULL ? ENOMEM : ro_ring_init(&s->ring, RING_ENTRIES, s->efd);
  uv_loop_t *loop = NULL;
  if (s->err == 0 && (napi_get_uv_event_loop(s->env, &loop) != napi_ok || uv_poll_init(loop, &s->poll, s->efd) != 0)) {
    ro_ring_close(&s->ring);
    s->err = EINVAL;
  }
  if (s->err != 0) {
    free(s->scratch);
    s->scratch = NULL;
    close(s->efd);
    s->efd = -1;
    return s->err;
  }
  s->polling = 1;
  s->poll.data = s;
  uv_poll_start(&s->poll, UV_READABLE, on_poll);
  uv_unref((uv_handle_t *)&s->poll); /* keeps the loop alive only while reads are in flight */
  return 0;
}

/* Marks the pages of [from, from + n) of the op's file; counts those not marked before. */
static void mark(rr_op *op, uint64_t from, uint64_t n) {
  rr_file *f = &op->job->files[op->file];
  int shift = ro_page_shift();
  uint64_t first = from >> shift, last = (from + n - 1) >> shift;
  for (uint64_t p = first; p <= last && p < f->vec_pages; p++) {
    op->job->fresh += (f->vec[p] & 1) == 0;
    f->vec[p] = 1;
  }
}

static void enqueue(rr_state *s, rr_op *op) {
  op->next = NULL;
  if (s->queue_tail != NULL) s->queue_tail->next = op;
  else s->queue_head = op;
  s->queue_tail = op;
}

/* The bytes of the op's next read: up to the pages of its header while its length is unknown,
 * else of its record, at most MAX_READ; 0 when it is read (or past the end of the file). */
static uint64_t next_span(const rr_op *op) {
  if (op->dst != NULL) return op->at < op->rec_end ? op->rec_end - op->at : 0;
  const rr_file *f = &op->job->files[op->file];
  uint64_t end = op->known ? op->rec_end : op->rec_off + RO_RECORD_HEADER_SIZE;
  uint64_t page = ro_page_size();
  end = end > UINT64_MAX - page ? UINT64_MAX / page * page : (end + page - 1) / page * page;
  if (end > f->size) end = f->size;
  if (op->at >= end) return 0;
  return end - op->at < MAX_READ ? end - op->at : MAX_READ;
}

/* The op's next read, queued; 0 when the record is read (or cannot be). */
int rr_next_read(rr_state *s, rr_op *op) {
  uint64_t want = next_span(op);
  if (want == 0) return 0;
  /* Only a header's bytes are looked at: the other reads all land in the shared scratch buffer. */
  if (!op->known && op->buf == NULL && (op->buf = malloc((size_t)want)) == NULL) return 0;
  enqueue(s, op);
  return 1;
}

/* Fills free ring slots from the queue and submits them with one io_uring_enter. */
void rr_submit(rr_state *s) {
  uint32_t added = 0;
  while (s->queue_head != NULL && s->inflight < s->ring.entries) {
    rr_op *op = s->queue_head;
    uint8_t *dst = op->dst != NULL ? op->dst : op->known ? s->scratch : op->buf;
    if (ro_ring_read(&s->ring, op->job->files[op->file].fd, dst, (uint32_t)next_span(op), op->at, (uint64_t)(uintptr_t)op) != 0) break;
    s->queue_head = op->next;
    if (s->queue_head == NULL) s->queue_tail = NULL;
    s->inflight++;
    added++;
  }
  if (added > 0) {
    /* A refused submission (EAGAIN, EBUSY: transient) leaves the entries in the ring, and
     * the next io_uring_enter submits them; the loop is kept alive meanwhile. */
    ro_ring_submit(&s->ring, 0);
    uv_ref((uv_handle_t *)&s->poll);
  }
}

void rr_settle(rr_state *s, rr_job *job) {
  napi_value v;
  if (job->err != 0) {
    napi_reject_deferred(s->env, job->deferred, ro_errno_error(s->env, job->err));
  } else {
    napi_create_double(s->env, (double)job->fresh, &v);
    napi_resolve_deferred(s->env, job->deferred, v);
  }
  rr_job_free(s, job, 1);
}

/* One completion: the pages it read marked, then the op's next read or the end of its job. */
static rr_job *complete(rr_state *s, rr_op *op, int32_t res) {
  s->inflight--;
  if (op->dst != NULL) {
    /* One read, as pread(2): what it returned (short only at the end of the file). */
    if (res < 0) op->job->err = -res;
    else op->job->fresh = (uint64_t)res;
    return --op->job->pending == 0 ? op->job : NULL;
  }
  if (res > 0) {
    mark(op, op->at, (uint64_t)res);
    if (!op->known && op->at <= op->rec_off && op->at + (uint64_t)res >= op->rec_off + RO_RECORD_HEADER_SIZE) {
      const uint8_t *h = op->buf + (op->rec_off - op->at);
      op->rec_end = op->rec_off + RO_RECORD_HEADER_SIZE + (uint64_t)ro_le32(h) + (uint64_t)ro_le32(h + 4);
      op->known = 1;
    }
    op->at += (uint64_t)res;
    if (rr_next_read(s, op)) return NULL;
  }
  return --op->job->pending == 0 ? op->job : NULL;
}

static void reap(rr_state *s) {
  uint64_t data;
  int32_t res;
  while (ro_ring_reap(&s->ring, &data, &res)) {
    rr_job *done = complete(s, (rr_op *)(uintptr_t)data, res);
    if (done != NULL) rr_settle(s, done);
  }
  rr_submit(s);
  if (s->inflight == 0) uv_unref((uv_handle_t *)&s->poll);
}

static void on_poll(uv_poll_t *handle, int status, int events) {
  (void)events;
  rr_state *s = handle->data;
  uint64_t v;
  (void)status; /* an error on an eventfd is not expected; the ring is looked at either way */
  if (read(s->efd, &v, sizeof v) < 0) v = 0; /* EAGAIN: a completion already reaped */
  napi_handle_scope hs;
  napi_callback_scope cs;
  napi_value resource;
  if (napi_open_handle_scope(s->env, &hs) != napi_ok) return;
  /* The promises resolved here run their reactions when the callback scope closes. */
  if (napi_get_reference_value(s->env, s->resource, &resource) == napi_ok &&
      napi_open_callback_scope(s->env, resource, s->ctx, &cs) == napi_ok) {
    reap(s);
    napi_close_callback_scope(s->env, cs);
  }
  napi_close_handle_scope(s->env, hs);
}

int rr_drain(rr_state *s) {
  s->queue_head = s->queue_tail = NULL;
  uint64_t ud;
  int32_t res;
  while (s->tried && s->err == 0 && s->inflight > 0 && ro_ring_submit(&s->ring, 1) == 0)
    while (ro_ring_reap(&s->ring, &ud, &res)) s->inflight--;
  /* Reads the ring would not wait for may still write into their buffers: those are leaked. */
  if (s->inflight > 0) return -1;
  while (s->jobs != NULL) rr_job_free(s, s->jobs, 0);
  return 0;
}
