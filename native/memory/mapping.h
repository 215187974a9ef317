/* Memory-mapped files: map, advise, touch, and drop from the page cache. */
#ifndef RO_MAPPING_H
#define RO_MAPPING_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint8_t *base; /* NULL for an empty file (nothing is mapped) */
  uint64_t size;
} ro_mapping;

/*
 * Maps the whole regular file `path` and closes the descriptor (the mapping keeps the
 * file alive, even once unlinked). `private_writable`: MAP_PRIVATE with PROT_WRITE and
 * MAP_NORESERVE, so a write through a view makes a private copy of that page instead of a
 * SIGSEGV; otherwise read-only and shared. Returns 0 or an errno value.
 */
int ro_map_file(const char *path, int private_writable, ro_mapping *out);

void ro_unmap(ro_mapping *m);

/* madvise(MADV_WILLNEED) where available: the kernel starts reading ahead. 0 or errno. */
int ro_advise_willneed(uint8_t *base, uint64_t size);

/* Reads one byte per page so every page is resident and mapped; returns a value that
 * depends on the bytes read (so the reads are not optimized away). */
uint64_t ro_touch_pages(const uint8_t *base, uint64_t size);

/*
 * Maps into this process the pages of the mapping that are in the page cache already, and
 * no other: mincore() says which, MADV_POPULATE_READ (Linux 5.14; one read per page where
 * it is missing) maps each run of them. No disk read is started for pages that are not
 * cached. Returns the pages mapped. Why: a first touch of a mapped page costs a fault
 * (~10-20 us on a VM), so a node that has just swapped to a version whose files are cached
 * (fetched or installed moments ago) would otherwise pay one per 64 KiB it reads, on its
 * event loop, for as long as the data file takes to be read through once.
 */
uint64_t ro_map_resident(uint8_t *base, uint64_t size);

/* posix_fadvise(POSIX_FADV_DONTNEED) on the whole file: drops its clean, unmapped pages
 * from the page cache (no root needed); for benchmarks of cold stores. 0 or errno. */
int ro_drop_cache(const char *path);

#endif
