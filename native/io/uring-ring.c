/* The raw io_uring of uring-ring.h: setup, the rings' mappings, reads, submission, completions. */
#define _GNU_SOURCE
#include "io/uring-ring.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

int ro_ring_init(ro_ring *r, uint32_t entries, int eventfd) {
  memset(r, 0, sizeof *r);
  r->fd = -1;
#if defined(__NR_io_uring_setup) && defined(__NR_io_uring_enter) && defined(__NR_io_uring_register)
  struct io_uring_params p;
  memset(&p, 0, sizeof p);
  int fd = (int)syscall(__NR_io_uring_setup, entries, &p);
  if (fd < 0) return errno;
  r->fd = fd;
  r->sq_len = p.sq_off.array + p.sq_entries * sizeof(uint32_t);
  r->cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
  int single = (p.features & IORING_FEAT_SINGLE_MMAP) != 0;
  if (single) r->sq_len = r->cq_len = r->sq_len > r->cq_len ? r->sq_len : r->cq_len;
  r->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
  r->sq_map = mmap(NULL, r->sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
  r->cq_map = single ? r->sq_map : mmap(NULL, r->cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_CQ_RING);
  r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
  if (r->sq_map == MAP_FAILED || r->cq_map == MAP_FAILED || r->sqes == MAP_FAILED) {
    int err = errno;
    if (r->sq_map == MAP_FAILED) r->sq_map = NULL;
    if (r->cq_map == MAP_FAILED) r->cq_map = NULL;
    if (r->sqes == MAP_FAILED) r->sqes = NULL;
    ro_ring_close(r);
    return err;
  }
  uint8_t *sq = r->sq_map, *cq = r->cq_map;
  r->sq_head = (uint32_t *)(sq + p.sq_off.head);
  r->sq_tail = (uint32_t *)(sq + p.sq_off.tail);
  r->sq_mask = *(uint32_t *)(sq + p.sq_off.ring_mask);
  r->sq_array = (uint32_t *)(sq + p.sq_off.array);
  r->cq_head = (uint32_t *)(cq + p.cq_off.head);
  r->cq_tail = (uint32_t *)(cq + p.cq_off.tail);
  r->cq_mask = *(uint32_t *)(cq + p.cq_off.ring_mask);
  r->cqes = cq + p.cq_off.cqes;
  r->entries = p.sq_entries < p.cq_entries ? p.sq_entries : p.cq_entries;
  r->local_tail = *r->sq_tail;
  if (eventfd >= 0 && syscall(__NR_io_uring_register, fd, IORING_REGISTER_EVENTFD, &eventfd, 1) != 0) {
    int err = errno;
    ro_ring_close(r);
    return err;
  }
  return 0;
#else
  (void)entries;
  (void)eventfd;
  return ENOSYS;
#endif
}

void ro_ring_close(ro_ring *r) {
  if (r->sqes != NULL) munmap(r->sqes, r->sqes_len);
  if (r->cq_map != NULL && r->cq_map != r->sq_map) munmap(r->cq_map, r->cq_len);
  if (r->sq_map != NULL) munmap(r->sq_map, r->sq_len);
  if (r->fd >= 0) close(r->fd);
  memset(r, 0, sizeof *r);
  r->fd = -1;
}

int ro_ring_read(ro_ring *r, int fd, void *buf, uint32_t len, uint64_t offset, uint64_t user_data) {
  uint32_t head = __atomic_load_n(r->sq_head, __ATOMIC_ACQUIRE);
  if (r->local_tail - head >= r->entries) return -1;
  uint32_t slot = r->local_tail & r->sq_mask;
  struct io_uring_sqe *e = (struct io_uring_sqe *)r->sqes + slot;
  memset(e, 0, sizeof *e);
  e->opcode = IORING_OP_READ;
  e->fd = fd;
  e->off = offset;
  e->addr = (uint64_t)(uintptr_t)buf;
  e->len = len;
  e->user_data = user_data;
  r->sq_array[slot] = slot;
  r->local_tail++;
  return 0;
}

int ro_ring_submit(ro_ring *r, uint32_t wait) {
  __atomic_store_n(r->sq_tail, r->local_tail, __ATOMIC_RELEASE);
  for (;;) {
    uint32_t pending = r->local_tail - __atomic_load_n(r->sq_head, __ATOMIC_ACQUIRE);
    if (pending == 0 && wait == 0) return 0;
    long n = syscall(__NR_io_uring_enter, r->fd, pending, wait, wait > 0 ? IORING_ENTER_GETEVENTS : 0, NULL, 0);
    if (n >= 0) return 0;
    if (errno != EINTR) return errno;
  }
}

int ro_ring_reap(ro_ring *r, uint64_t *user_data, int32_t *res) {
  uint32_t head = *r->cq_head;
  if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE)) return 0;
  const struct io_uring_cqe *c = (const struct io_uring_cqe *)r->cqes + (head & r->cq_mask);
  *user_data = c->user_data;
  *res = c->res;
  __atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
  return 1;
}
