/*
 * Residency vectors (residency.h). The vector is written by pool threads (refresh, warm)
 * while an event loop reads it; every access is a single byte, and a stale byte only
 * costs a lookup the wrong path once: a record marked resident that was evicted since
 * faults in on the caller's thread (one page: the mapping is MADV_RANDOM), one marked
 * cold that is cached goes through a warm-up that finds its pages at once.
 */
#define _GNU_SOURCE
#include "memory/residency.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bytes.h"
#include "lookup/index-scan.h"
#include "memory/mapping.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

uint64_t ro_page_size(void) {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (uint64_t)p : 4096;
}

int ro_page_shift(void) {
  uint64_t p = ro_page_size();
  int s = 0;
  while (((uint64_t)1 << s) < p) s++;
  return s;
}

uint64_t ro_pages_of(uint64_t size) { return (size + ro_page_size() - 1) >> ro_page_shift(); }

int ro_advise_random(uint8_t *base, uint64_t size) {
  if (base == NULL || size == 0) return 0;
  return madvise(base, (size_t)size, MADV_RANDOM) == 0 ? 0 : errno;
}

/* Asked this many pages at a time, so one call never holds the mapping's lock for long. */
#define REFRESH_SLICE_PAGES ((uint64_t)1 << 16)

int ro_refresh_residency(uint8_t *base, uint64_t size, uint8_t *vec, uint64_t *resident) {
  *resident = 0;
  if (base == NULL || size == 0) return 0;
  uint64_t page = ro_page_size(), pages = ro_pages_of(size);
  for (uint64_t first = 0; first < pages; first += REFRESH_SLICE_PAGES) {
    uint64_t n = pages - first < REFRESH_SLICE_PAGES ? pages - first : REFRESH_SLICE_PAGES;
    uint64_t bytes = first + n == pages ? size - first * page : n * page;
    if (mincore(base + first * page, (size_t)bytes, vec + first) != 0) return errno;
    for (uint64_t i = 0; i < n; i++) {
      vec[first + i] &= 1;
      *resident += vec[first + i];
    }
  }
  return 0;
}

/* Maps [from, to) of the mapping in, from this thread; marks and counts the pages. */
static uint64_t populate(uint8_t *base, uint64_t size, uint8_t *vec, uint64_t from, uint64_t to) {
  if (to > size) to = size;
  if (from >= to) return 0;
  int shift = ro_page_shift();
  uint64_t first = from >> shift, last = (to - 1) >> shift, fresh = 0;
  for (uint64_t p = first; p <= last; p++) fresh += (vec[p] & 1) == 0;
  uint8_t *start = base + (first << shift);
  uint64_t len = ((last + 1) << shift) - (first << shift);
  if (start + len > base + size) len = (uint64_t)(base + size - start);
  if (madvise(start, (size_t)len, MADV_POPULATE_READ) != 0) ro_touch_pages(start, len); /* kernels before 5.14 */
  memset(vec + first, 1, (size_t)(last - first + 1));
  return fresh;
}

uint64_t ro_warm_record(uint8_t *base, uint64_t size, uint8_t *vec, uint64_t offset, uint64_t length) {
  if (base == NULL || offset >= size) return 0;
  uint64_t fresh = 0;
  if (length == 0) {
    fresh += populate(base, size, vec, offset, offset + RO_RECORD_HEADER_SIZE);
    if (size - offset < RO_RECORD_HEADER_SIZE) return fresh;
    /* The lookup checks these lengths against the file again before it trusts them. */
    length = RO_RECORD_HEADER_SIZE + (uint64_t)ro_le32(base + offset) + (uint64_t)ro_le32(base + offset + 4);
  }
  return fresh + populate(base, size, vec, offset, offset + length);
}

/* At most this many ranges per process_madvise call (the kernel's UIO_MAXIOV is 1024). */
#define START_READS_SLICE 1024

void ro_start_reads(const struct iovec *iov, uint32_t count) {
  if (count == 0) return;
  uint32_t done = 0;
#if defined(SYS_pidfd_open) && defined(SYS_process_madvise)
  int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
  if (pidfd >= 0) {
    while (done < count) {
      uint32_t n = count - done < START_READS_SLICE ? count - done : START_READS_SLICE;
      if (syscall(SYS_process_madvise, pidfd, iov + done, (size_t)n, MADV_WILLNEED, 0) < 0) break;
      done += n;
    }
    close(pidfd);
  }
#endif
  for (; done < count; done++) madvise(iov[done].iov_base, iov[done].iov_len, MADV_WILLNEED);
}

int ro_lock_pages(uint8_t *base, uint64_t size) {
  if (base == NULL || size == 0) return 0;
  return mlock(base, (size_t)size) == 0 ? 0 : errno;
}
