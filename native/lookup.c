#include "lookup.h"

#include <string.h>

#include "bytes.h"
#include "crc32.h"
#include "index-scan.h"
#include "md5.h"

#define TWO64 18446744073709551616.0

void ro_key_hash(const ro_store *s, const uint8_t *key, size_t len, uint8_t out[16]) {
  ro_md5(key, len, out);
  if (s->collide_bits >= 0) {
    /* formats/store/key-hash.ts: keep `bits` bits of byte 0, zero bytes 1-7. */
    out[0] &= (uint8_t)((1u << s->collide_bits) - 1);
    memset(out + 1, 0, 7);
  }
}

static inline uint64_t entry_key(const ro_chunk *c, uint64_t i) { return ro_be64(c->entries + i * RO_ENTRY_SIZE); }

static inline uint64_t entry_offset(const ro_chunk *c, uint64_t i) { return ro_le64(c->entries + i * RO_ENTRY_SIZE + 8); }

/* ceil(2 * log2(log2(n) + 1)) + 2, as formats/store/search.ts: then bisect. */
static int interpolation_budget(uint64_t n) {
  if (n < 2) return 1;
  int lg = 63 - __builtin_clzll(n); /* floor(log2 n) */
  int b = 0;
  uint64_t v = (uint64_t)lg + 1;
  while (((uint64_t)1 << b) < v) b++; /* ceil(log2(lg + 1)) */
  return 2 * b + 2;
}

/* Position of `target` (any of equal entries), or where it would be inserted. Sets
 * *order_error when an entry lies outside the bounds its neighbours give it: only an
 * index that was not scanned at open can be out of order. */
static uint64_t search(const ro_store *s, const ro_chunk *c, uint64_t target, uint32_t *probes, int *order_error) {
  uint64_t left = 0, right = c->count;
  *order_error = 0;
  if (s->binary) {
    while (left < right) {
      uint64_t mid = left + (right - left) / 2;
      uint64_t k = entry_key(c, mid);
      (*probes)++;
      if (k == target) return mid;
      if (k < target) left = mid + 1;
      else right = mid;
    }
    return left;
  }
  uint64_t low = 0; /* every entry before `left` is < target and >= low */
  double low_d = 0.0, high_d = TWO64;
  int high_is_entry = 0;
  uint64_t high = 0; /* when high_is_entry: the key at `right`, > target */
  if (c->radix != NULL) {
    uint64_t b = target >> (64 - c->radix_bits);
    right = c->radix[b + 1];
    left = c->radix[b];
    /* The table is built by the index scan; clamping keeps even a bad one in bounds. */
    if (right > c->count) right = c->count;
    if (left > right) left = right;
    low = b << (64 - c->radix_bits);
    low_d = (double)low;
    high_d = low_d + (double)((uint64_t)1 << (64 - c->radix_bits));
  }
  int budget = interpolation_budget(c->count);
  double target_d = (double)target;
  while (left < right) {
    uint64_t pos;
    if (budget > 0 && high_d > low_d) {
      budget--;
      double f = (target_d - low_d) / (high_d - low_d);
      double p = (double)left + f * (double)(right - left);
      pos = p <= (double)left ? left : p >= (double)(right - 1) ? right - 1 : (uint64_t)p;
    } else {
      pos = left + (right - left) / 2;
    }
    (*probes)++;
    uint64_t k = entry_key(c, pos);
    if (k < low || (high_is_entry && k > high)) {
      *order_error = 1;
      return pos;
    }
    if (k == target) return pos;
    if (k < target) {
      left = pos + 1;
      low = k;
      low_d = (double)k;
    } else {
      right = pos;
      high = k;
      high_is_entry = 1;
      high_d = (double)k;
    }
  }
  return left;
}

enum { NOT_THIS_KEY = 2 };

/* RO_HIT, NOT_THIS_KEY (a hash-prefix collision), or an RO_E_* code. */
static int check_record(const ro_store *s, const ro_chunk *c, uint64_t off, const uint8_t *key, size_t len, uint64_t prefix,
                        ro_hit *out) {
  out->record_offset = off;
  if (off < RO_HEADER_SIZE || off > c->data_size || c->data_size - off < RO_RECORD_HEADER_SIZE) return RO_E_BAD_OFFSET;
  const uint8_t *rec = c->data + off;
  uint64_t klen = ro_le32(rec), vlen = ro_le32(rec + 4);
  uint64_t body = klen + vlen;
  if (body > c->data_size - off - RO_RECORD_HEADER_SIZE) return RO_E_PAST_END;
  const uint8_t *stored_key = rec + RO_RECORD_HEADER_SIZE;
  if (s->check_crc && ro_crc32(0, stored_key, (size_t)body) != ro_le32(rec + 8)) return RO_E_CRC;
  if (klen == len && memcmp(stored_key, key, len) == 0) {
    out->value_offset = off + RO_RECORD_HEADER_SIZE + klen;
    out->value_length = vlen;
    return RO_HIT;
  }
  /* Another key under this prefix is a collision only if it hashes to the same prefix;
   * otherwise the record is damaged in a way its CRC cannot see. */
  uint8_t h[16];
  ro_key_hash(s, stored_key, (size_t)klen, h);
  return ro_be64(h) == prefix ? NOT_THIS_KEY : RO_E_FOREIGN_KEY;
}

int ro_lookup_hashed(const ro_store *s, const uint8_t *key, size_t len, const uint8_t hash[16], ro_hit *out) {
  uint32_t chunk = (uint32_t)(((uint32_t)hash[4] << 24 | (uint32_t)hash[5] << 16 | (uint32_t)hash[6] << 8 | hash[7]) % s->chunk_count);
  const ro_chunk *c = &s->chunks[chunk];
  uint64_t prefix = ro_be64(hash);
  out->chunk = chunk;
  out->probes = 0;
  int order_error;
  uint64_t pos = search(s, c, prefix, &out->probes, &order_error);
  if (order_error) {
    out->record_offset = pos < c->count ? entry_offset(c, pos) : 0;
    return RO_E_ORDER;
  }
  if (pos >= c->count || entry_key(c, pos) != prefix) return RO_MISS;
  int r = check_record(s, c, entry_offset(c, pos), key, len, prefix, out);
  if (r != NOT_THIS_KEY) return r;
  /* Equal prefixes are hash collisions: the key stored in the record decides. */
  for (uint64_t i = pos; i-- > 0 && entry_key(c, i) == prefix;) {
    r = check_record(s, c, entry_offset(c, i), key, len, prefix, out);
    if (r != NOT_THIS_KEY) return r;
  }
  for (uint64_t i = pos + 1; i < c->count && entry_key(c, i) == prefix; i++) {
    r = check_record(s, c, entry_offset(c, i), key, len, prefix, out);
    if (r != NOT_THIS_KEY) return r;
  }
  return RO_MISS;
}

int ro_lookup(const ro_store *s, const uint8_t *key, size_t len, ro_hit *out) {
  uint8_t hash[16];
  ro_key_hash(s, key, len, hash);
  return ro_lookup_hashed(s, key, len, hash, out);
}
