/* One pass over a chunk's index entries: order and offset checks, radix table. */
#ifndef RO_INDEX_SCAN_H
#define RO_INDEX_SCAN_H

#include <stdint.h>

#define RO_HEADER_SIZE 64
#define RO_ENTRY_SIZE 16
#define RO_RECORD_HEADER_SIZE 12

enum { RO_SCAN_OK = 0, RO_SCAN_ORDER = 1, RO_SCAN_OFFSET = 2 };

/* The unit of an index file's block checks: a lookup that finds no entry re-checks the
 * blocks its search read (lookup.h, RO_E_INDEX). Entries never straddle two blocks. */
#define RO_INDEX_BLOCK 4096

/*
 * Checks `count` entries (16 bytes each: 8-byte big-endian hash prefix, u64 LE offset):
 * prefixes non-decreasing, offsets strictly increasing from 64, below 2^53 and leaving
 * room for a record header inside `data_size`. When `radix` is not NULL it is filled
 * with 2^bits + 1 bucket starts (radix[b] = first entry whose top `bits` bits are >= b).
 * Returns RO_SCAN_* and, on failure, the entry number in *bad_entry.
 */
int ro_scan_index(const uint8_t *entries, uint64_t count, uint64_t data_size, uint32_t *radix, int bits, uint64_t *bad_entry);

/* CRC-32 of each RO_INDEX_BLOCK bytes of a whole index file of `size` bytes (the last one
 * shorter), into out[0 .. ceil(size / RO_INDEX_BLOCK)). */
void ro_index_block_crcs(const uint8_t *file, uint64_t size, uint32_t *out);

#endif
