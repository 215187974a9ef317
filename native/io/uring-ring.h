/*
 * One io_uring, set up with raw system calls (liburing is not a dependency: CI machines and
 * servers may not have it), without SQPOLL (its kernel thread competes with the serving
 * threads on small machines). The caller owns it from one thread.
 */
#ifndef RO_URING_RING_H
#define RO_URING_RING_H

#include <stdint.h>

typedef struct {
  int fd;
  uint32_t entries; /* submission slots; the completion queue has at least as many */
  uint32_t *sq_head, *sq_tail, sq_mask, *sq_array;
  uint32_t *cq_head, *cq_tail, cq_mask;
  void *sqes, *cqes;
  void *sq_map, *cq_map;
  uint64_t sq_len, cq_len, sqes_len;
  uint32_t local_tail; /* submission entries filled, published at submit */
} ro_ring;

/* Sets up a ring of `entries` slots whose completions also signal `eventfd` (-1: none).
 * 0, or the errno io_uring_setup failed with (ENOSYS, EPERM under a filter or when
 * kernel.io_uring_disabled says so, ENOMEM). */
int ro_ring_init(ro_ring *r, uint32_t entries, int eventfd);
void ro_ring_close(ro_ring *r);

/* Queues a read of `len` bytes at `offset` of `fd` into `buf`; -1 when the queue is full. */
int ro_ring_read(ro_ring *r, int fd, void *buf, uint32_t len, uint64_t offset, uint64_t user_data);

/* Submits what was queued in one io_uring_enter, waiting for `wait` completions (0: none). 0 or errno. */
int ro_ring_submit(ro_ring *r, uint32_t wait);

/* The next completion (its user_data and result), 1; 0 when there is none. */
int ro_ring_reap(ro_ring *r, uint64_t *user_data, int32_t *res);

#endif
