#include "lookup/index-scan.h"

#include "bytes.h"
#include "hash/crc32.h"

void ro_index_block_crcs(const uint8_t *file, uint64_t size, uint32_t *out) {
  for (uint64_t at = 0, b = 0; at < size; at += RO_INDEX_BLOCK, b++)
    out[b] = ro_crc32(0, file + at, (size_t)(size - at < RO_INDEX_BLOCK ? size - at : RO_INDEX_BLOCK));
}

int ro_scan_index(const uint8_t *entries, uint64_t count, uint64_t data_size, uint32_t *radix, int bits, uint64_t *bad_entry) {
  uint64_t prev_key = 0;
  uint64_t prev_offset = RO_HEADER_SIZE - 1;
  uint64_t next_bucket = 0;
  uint64_t buckets = radix != NULL ? (uint64_t)1 << bits : 0;
  for (uint64_t i = 0; i < count; i++) {
    const uint8_t *e = entries + i * RO_ENTRY_SIZE;
    uint64_t key = ro_be64(e);
    uint64_t off = ro_le64(e + 8);
    if (i > 0 && key < prev_key) {
      *bad_entry = i;
      return RO_SCAN_ORDER;
    }
    if (off >= ((uint64_t)1 << 53) || off <= prev_offset || off + RO_RECORD_HEADER_SIZE > data_size) {
      *bad_entry = i;
      return RO_SCAN_OFFSET;
    }
    if (radix != NULL) {
      uint64_t b = key >> (64 - bits);
      while (next_bucket <= b) radix[next_bucket++] = (uint32_t)i;
    }
    prev_key = key;
    prev_offset = off;
  }
  if (radix != NULL)
    while (next_bucket <= buckets) radix[next_bucket++] = (uint32_t)count;
  return RO_SCAN_OK;
}
