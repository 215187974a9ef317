/*
 * Whole-file mappings. Sizes are taken from fstat on the open descriptor and the
 * mapping never extends past them, so a file that was complete at open never faults;
 * rostore's version files are immutable (new versions are new directories), which is
 * what makes that promise hold for the life of the mapping.
 */
#define _GNU_SOURCE
#include "memory/mapping.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0
#endif

int ro_map_file(const char *path, int private_writable, ro_mapping *out) {
  out->base = NULL;
  out->size = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return err;
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return EINVAL;
  }
  if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX) {
    close(fd);
    return EFBIG;
  }
  out->size = (uint64_t)st.st_size;
  if (out->size == 0) {
    close(fd);
    return 0;
  }
  int prot = private_writable ? PROT_READ | PROT_WRITE : PROT_READ;
  int flags = private_writable ? MAP_PRIVATE | MAP_NORESERVE : MAP_SHARED;
  void *p = mmap(NULL, (size_t)out->size, prot, flags, fd, 0);
  int err = p == MAP_FAILED ? errno : 0;
  close(fd);
  if (err != 0) {
    out->size = 0;
    return err;
  }
  out->base = (uint8_t *)p;
  return 0;
}

void ro_unmap(ro_mapping *m) {
  if (m->base != NULL) munmap(m->base, (size_t)m->size);
  m->base = NULL;
  m->size = 0;
}

int ro_advise_willneed(uint8_t *base, uint64_t size) {
#ifdef MADV_WILLNEED
  if (base != NULL && size > 0 && madvise(base, (size_t)size, MADV_WILLNEED) != 0) return errno;
#else
  (void)base;
  (void)size;
#endif
  return 0;
}

uint64_t ro_touch_pages(const uint8_t *base, uint64_t size) {
  long page = sysconf(_SC_PAGESIZE);
  uint64_t step = page > 0 ? (uint64_t)page : 4096;
  uint64_t sum = 0;
  for (uint64_t at = 0; at < size; at += step) sum += ((const volatile uint8_t *)base)[at];
  return sum;
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

/* Residency is asked this many pages at a time: the vector mincore fills is one byte per page. */
#define RESIDENT_SLICE_PAGES ((uint64_t)1 << 18)

uint64_t ro_map_resident(uint8_t *base, uint64_t size) {
  long p = sysconf(_SC_PAGESIZE);
  uint64_t page = p > 0 ? (uint64_t)p : 4096;
  if (base == NULL || size == 0 || ((uintptr_t)base % page) != 0) return 0;
  uint64_t pages = (size + page - 1) / page;
  unsigned char *vec = malloc((size_t)(pages < RESIDENT_SLICE_PAGES ? pages : RESIDENT_SLICE_PAGES));
  if (vec == NULL) return 0;
  uint64_t mapped = 0;
  int populate = 1;
  for (uint64_t first = 0; first < pages; first += RESIDENT_SLICE_PAGES) {
    uint64_t n = pages - first < RESIDENT_SLICE_PAGES ? pages - first : RESIDENT_SLICE_PAGES;
    uint64_t bytes = first + n == pages ? size - first * page : n * page;
    if (mincore(base + first * page, (size_t)bytes, vec) != 0) break;
    for (uint64_t i = 0; i < n;) {
      if (!(vec[i] & 1)) {
        i++;
        continue;
      }
      uint64_t j = i;
      while (j < n && (vec[j] & 1)) j++;
      uint8_t *run = base + (first + i) * page;
      uint64_t len = (j - i) * page;
      if (run + len > base + size) len = (uint64_t)(base + size - run);
      if (!populate || madvise(run, (size_t)len, MADV_POPULATE_READ) != 0) {
        populate = 0; /* an older kernel: the same by reading one byte per page */
        ro_touch_pages(run, len);
      }
      mapped += j - i;
      i = j;
    }
  }
  free(vec);
  return mapped;
}

int ro_drop_cache(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = 0;
#ifdef POSIX_FADV_DONTNEED
  err = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
#else
  err = ENOSYS;
#endif
  close(fd);
  return err;
}
