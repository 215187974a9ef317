/*
 * Which pages of a mapped data file are in memory, as the lookups see it: one byte per
 * page (bit 0 set: resident), the same vector mincore(2) fills. Lookups read it instead of
 * asking the kernel (no system call on the hot path); a job on the libuv pool refreshes it,
 * and the warm-up of a cold record marks the pages it brought in.
 */
#ifndef RO_RESIDENCY_H
#define RO_RESIDENCY_H

#include <stdint.h>

/* The system page size (4096 where sysconf fails) and its log2. */
uint64_t ro_page_size(void);
int ro_page_shift(void);

/* Pages covering `size` bytes. */
uint64_t ro_pages_of(uint64_t size);

/* madvise(MADV_RANDOM) over the mapping: a page fault reads that page only, with no
 * read-ahead around it. 0 or errno. */
int ro_advise_random(uint8_t *base, uint64_t size);

/* mincore over the whole mapping into vec (ro_pages_of(size) bytes); the resident pages
 * counted in *resident. 0 or errno (vec is then left as it was past the failed slice). */
int ro_refresh_residency(uint8_t *base, uint64_t size, uint8_t *vec, uint64_t *resident);

/*
 * Brings the record at `offset` of a data file into memory from the calling thread (a pool
 * thread: the page faults block it, not an event loop) and marks its pages in vec. When
 * `length` is 0 the record's length is read from its header first. Returns the pages that
 * were not marked resident before.
 */
uint64_t ro_warm_record(uint8_t *base, uint64_t size, uint8_t *vec, uint64_t offset, uint64_t length);

/*
 * Starts reading the `count` ranges `iov` (of mappings of this process) into the page
 * cache without waiting: one process_madvise(MADV_WILLNEED) over all of them where the
 * kernel has it (Linux 5.16; one system call, the reads submitted back to back), else one
 * madvise each. Warming each record after this waits for reads already in flight, so a
 * batch costs one round of device latency, not one per record.
 */
struct iovec;
void ro_start_reads(const struct iovec *iov, uint32_t count);

/* mlock(2) over the mapping (its pages stay in memory). 0 or errno. */
int ro_lock_pages(uint8_t *base, uint64_t size);

#endif
