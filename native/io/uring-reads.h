/*
 * The state of the io_uring cold reads of one N-API environment (uring-reads.c: the ring, the
 * reads waiting for a slot, the completions on the loop; uring-napi.c: the functions).
 */
#ifndef RO_URING_READS_H
#define RO_URING_READS_H

#include <stdint.h>
#include <uv.h>

#include "io/uring-ring.h"
#include "napi-util.h"

typedef struct {
  int fd;
  uint64_t size;
  uint8_t *vec;
  uint64_t vec_pages;
} rr_file;

struct rr_job;

typedef struct rr_op {
  struct rr_job *job;
  struct rr_op *next; /* in the queue of reads waiting for a slot */
  uint32_t file;
  int known;          /* rec_end is known (from the caller, or from the header read) */
  uint64_t rec_off, rec_end, at;
  uint8_t *buf; /* the header's pages, while the record's length is not known */
  uint8_t *dst; /* preadRing: the caller's buffer, read into as one pread (no page rounding) */
} rr_op;

typedef struct rr_job {
  struct rr_job *prev, *next; /* the state's jobs, freed at teardown */
  napi_deferred deferred;
  napi_ref *refs;
  uint32_t ref_count;
  rr_file *files;
  rr_op *ops;
  uint32_t count, pending;
  uint64_t fresh; /* pages not marked before; preadRing: the bytes read */
  int err;        /* preadRing: the read's errno */
} rr_job;

typedef struct {
  napi_env env;
  int tried, err; /* the ring's setup: done once, and its errno */
  ro_ring ring;
  int efd;
  uint8_t *scratch; /* where every read whose bytes nobody looks at lands (MAX_READ bytes) */
  uv_poll_t poll;
  int polling;
  napi_async_context ctx;
  napi_ref resource;
  uint32_t inflight;
  rr_op *queue_head, *queue_tail;
  rr_job *jobs;
  napi_async_cleanup_hook_handle hook;
  int leak; /* reads the teardown could not wait for: their buffers are never freed */
} rr_state;

/* Sets up the ring and its eventfd watch on the environment's loop, once: 0 or errno. */
int rr_ensure_ring(rr_state *s);
/* Queues the op's next read: 0 when its record is read (or cannot be). */
int rr_next_read(rr_state *s, rr_op *op);
/* Fills free ring slots from the queue and submits them with one io_uring_enter. */
void rr_submit(rr_state *s);
/* Resolves the job's promise with the pages it found unmarked, and frees it. */
void rr_settle(rr_state *s, rr_job *job);
void rr_job_free(rr_state *s, rr_job *job, int delete_refs);
/* The environment is going away: waits for the reads in flight, frees every job unresolved;
 * -1 when the ring could not be waited for (the jobs and the scratch buffer are then kept). */
int rr_drain(rr_state *s);

#endif
