/*
 * The whole lookup of one key over mapped chunk files: key hash, chunk, index search,
 * record bounds, CRC, key compare and hash-prefix collisions. Pure: no allocation, no
 * system call, no N-API.
 */
#ifndef RO_LOOKUP_H
#define RO_LOOKUP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  const uint8_t *entries; /* the index entries (the index file after its 64-byte header) */
  uint64_t count;
  const uint8_t *data; /* the whole data file */
  uint64_t data_size;
  const uint32_t *radix; /* NULL: no radix table */
  int radix_bits;
  const uint8_t *resident; /* NULL, or one byte per data page (residency.h) */
  const uint32_t *index_crcs; /* NULL, or the CRC-32 of each RO_INDEX_BLOCK of the index file, taken at open */
} ro_chunk;

typedef struct {
  const ro_chunk *chunks;
  uint32_t chunk_count;
  /* Format 2 (partition files): part_slots[p] is partition p's slot among the held ones
   * (-1: not held), for p < part_count; chunk slot = slot * part_chunks + chunk. NULL:
   * format 1, chunk = u32be(h[4..8]) mod chunk_count. */
  const int32_t *part_slots;
  uint32_t part_count;
  uint32_t part_chunks;
  int binary;       /* binary search instead of interpolation */
  int check_crc;    /* verify every record read against its CRC-32 */
  int collide_bits; /* -1: MD5; otherwise the test hash md5-collide-N */
  int cold_check;   /* answer RO_COLD instead of reading a page not marked resident */
  int page_shift;
} ro_store;

typedef struct {
  uint32_t chunk;
  uint32_t probes;         /* index entries compared */
  uint64_t value_offset;   /* in the chunk's data file */
  uint64_t value_length;
  uint64_t record_offset;  /* the record found, or the damaged one */
} ro_hit;

enum {
  RO_MISS = 0,
  RO_HIT = 1,
  RO_E_PAST_END = -1,     /* a record runs past the end of the data file */
  RO_E_CRC = -2,          /* a record fails its CRC */
  RO_E_FOREIGN_KEY = -3,  /* a record holds a key that does not belong to its index entry */
  RO_E_BAD_OFFSET = -4,   /* an index entry points outside the data file */
  RO_E_ORDER = -5,        /* index entries out of order (seen while searching) */
  /* A lookup that found no entry re-checked the index blocks its search read, and one no
   * longer has the CRC it had at open: the index was damaged since, and "absent" would be a
   * guess (record_offset: the block's byte offset in the index file). */
  RO_E_INDEX = -6,
  /* With cold_check: the record's pages are not marked resident, and nothing of them was
   * read; record_offset names the record, value_length the bytes to bring in (0: its
   * header was not read either). */
  RO_COLD = 4
};

/* A key's chunk: RO_NOT_HELD when its partition is not held (the key is absent). */
#define RO_NOT_HELD UINT32_MAX

static inline uint32_t ro_chunk_slot(const ro_store *s, const uint8_t hash[16]) {
  uint32_t lo = (uint32_t)hash[4] << 24 | (uint32_t)hash[5] << 16 | (uint32_t)hash[6] << 8 | hash[7];
  if (s->part_slots == NULL) return lo % s->chunk_count;
  uint32_t hi = (uint32_t)hash[0] << 24 | (uint32_t)hash[1] << 16 | (uint32_t)hash[2] << 8 | hash[3];
  int32_t slot = s->part_slots[hi % s->part_count];
  return slot < 0 ? RO_NOT_HELD : (uint32_t)slot * s->part_chunks + lo % s->part_chunks;
}

void ro_key_hash(const ro_store *s, const uint8_t *key, size_t len, uint8_t out[16]);

/* RO_HIT (with *out filled), RO_MISS, or an RO_E_* code (out->chunk and
 * out->record_offset name the damage). */
int ro_lookup(const ro_store *s, const uint8_t *key, size_t len, ro_hit *out);

/* The same for a key whose hash is already known (batches hash first, then sort). */
int ro_lookup_hashed(const ro_store *s, const uint8_t *key, size_t len, const uint8_t hash[16], ro_hit *out);

/*
 * A lookup in three steps, so that a batch can overlap the memory latency of many keys
 * (a dependent miss costs ~230 ns on this VM; a hundred independent ones overlap):
 * ro_prefetch_entry touches the index entry the search will probe first; ro_locate
 * searches the index and touches the record it points to (RO_HIT: a candidate at *pos;
 * RO_MISS; RO_E_ORDER); ro_finish checks the record(s) at pos and fills *out as
 * ro_lookup_hashed would. ro_lookup_hashed is ro_locate then ro_finish.
 */
void ro_prefetch_entry(const ro_store *s, const uint8_t hash[16]);
int ro_locate(const ro_store *s, const uint8_t hash[16], ro_hit *out, uint64_t *pos);
int ro_finish(const ro_store *s, const uint8_t *key, size_t len, const uint8_t hash[16], uint64_t pos, ro_hit *out);

#endif
