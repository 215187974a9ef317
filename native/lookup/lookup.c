#include "lookup/lookup.h"

#include <string.h>

#include "bytes.h"
#include "hash/crc32.h"
#include "lookup/index-scan.h"
#include "hash/md5.h"

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

/* Where a search of `target` in chunk c starts: the radix table's slice (when the chunk
 * has one) and the key range that slice covers. */
typedef struct {
  uint64_t left, right; /* entries [left, right) */
  uint64_t low;         /* every entry before `left` is < target and >= low */
  double low_d, high_d;
} search_range;

static search_range start_range(const ro_chunk *c, uint64_t target) {
  search_range r = {0, c->count, 0, 0.0, TWO64};
  if (c->radix != NULL) {
    uint64_t b = target >> (64 - c->radix_bits);
    r.right = c->radix[b + 1];
    r.left = c->radix[b];
    /* The table is built by the index scan; clamping keeps even a bad one in bounds. */
    if (r.right > c->count) r.right = c->count;
    if (r.left > r.right) r.left = r.right;
    r.low = b << (64 - c->radix_bits);
    r.low_d = (double)r.low;
    r.high_d = r.low_d + (double)((uint64_t)1 << (64 - c->radix_bits));
  }
  return r;
}

/* The entry an interpolation step probes in [left, right) (left < right). */
static inline uint64_t interpolate(uint64_t left, uint64_t right, double low_d, double high_d, double target_d) {
  double f = (target_d - low_d) / (high_d - low_d);
  double p = (double)left + f * (double)(right - left);
  return p <= (double)left ? left : p >= (double)(right - 1) ? right - 1 : (uint64_t)p;
}

/* Entries whose index blocks a miss re-checks: the last ones the search compared. */
#define VISITED_MAX 8

typedef struct {
  uint64_t at[VISITED_MAX];
  int n;
} visited_entries;

static inline void visit(visited_entries *v, uint64_t i) {
  if (v == NULL) return;
  v->at[v->n % VISITED_MAX] = i;
  v->n++;
}

/* Position of `target` (any of equal entries), or where it would be inserted. Sets
 * *order_error when an entry lies outside the bounds its neighbours give it: only an
 * index that was not scanned at open can be out of order. */
static uint64_t search(const ro_store *s, const ro_chunk *c, uint64_t target, uint32_t *probes, int *order_error, visited_entries *seen) {
  uint64_t left = 0, right = c->count;
  *order_error = 0;
  if (s->binary) {
    while (left < right) {
      uint64_t mid = left + (right - left) / 2;
      uint64_t k = entry_key(c, mid);
      (*probes)++;
      visit(seen, mid);
      if (k == target) return mid;
      if (k < target) left = mid + 1;
      else right = mid;
    }
    return left;
  }
  search_range r = start_range(c, target);
  left = r.left;
  right = r.right;
  uint64_t low = r.low;
  double low_d = r.low_d, high_d = r.high_d;
  int high_is_entry = 0;
  uint64_t high = 0; /* when high_is_entry: the key at `right`, > target */
  int budget = interpolation_budget(c->count);
  double target_d = (double)target;
  while (left < right) {
    uint64_t pos;
    if (budget > 0 && high_d > low_d) {
      budget--;
      pos = interpolate(left, right, low_d, high_d, target_d);
    } else {
      pos = left + (right - left) / 2;
    }
    (*probes)++;
    visit(seen, pos);
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

/* Whether every page of [off, off + len) of c's data is marked resident (len > 0). */
static inline int resident(const ro_store *s, const ro_chunk *c, uint64_t off, uint64_t len) {
  for (uint64_t p = off >> s->page_shift, last = (off + len - 1) >> s->page_shift; p <= last; p++)
    if (!(c->resident[p] & 1)) return 0;
  return 1;
}

/* RO_HIT, NOT_THIS_KEY (a hash-prefix collision), or an RO_E_* code. */
static int check_record(const ro_store *s, const ro_chunk *c, uint64_t off, const uint8_t *key, size_t len, uint64_t prefix,
                        ro_hit *out) {
  out->record_offset = off;
  if (off < RO_HEADER_SIZE || off > c->data_size || c->data_size - off < RO_RECORD_HEADER_SIZE) return RO_E_BAD_OFFSET;
  int cold = s->cold_check && c->resident != NULL;
  if (cold && !resident(s, c, off, RO_RECORD_HEADER_SIZE)) {
    out->value_length = 0;
    return RO_COLD;
  }
  const uint8_t *rec = c->data + off;
  uint64_t klen = ro_le32(rec), vlen = ro_le32(rec + 4);
  uint64_t body = klen + vlen;
  if (body > c->data_size - off - RO_RECORD_HEADER_SIZE) return RO_E_PAST_END;
  if (cold && !resident(s, c, off, RO_RECORD_HEADER_SIZE + body)) {
    out->value_length = RO_RECORD_HEADER_SIZE + body;
    return RO_COLD;
  }
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

void ro_prefetch_entry(const ro_store *s, const uint8_t hash[16]) {
  uint32_t chunk = ro_chunk_slot(s, hash);
  if (chunk == RO_NOT_HELD) return;
  const ro_chunk *c = &s->chunks[chunk];
  uint64_t target = ro_be64(hash);
  uint64_t pos;
  if (s->binary) {
    pos = c->count / 2;
  } else {
    search_range r = start_range(c, target);
    if (r.left >= r.right) return;
    pos = interpolate(r.left, r.right, r.low_d, r.high_d, (double)target);
  }
  if (pos < c->count) __builtin_prefetch(c->entries + pos * RO_ENTRY_SIZE);
}

/* Whether the index block holding entry i differs from its CRC at open. */
static int block_damaged(const ro_chunk *c, uint64_t i, uint64_t *block_offset) {
  uint64_t size = RO_HEADER_SIZE + c->count * RO_ENTRY_SIZE;
  uint64_t start = (RO_HEADER_SIZE + i * RO_ENTRY_SIZE) / RO_INDEX_BLOCK * RO_INDEX_BLOCK;
  uint64_t len = size - start < RO_INDEX_BLOCK ? size - start : RO_INDEX_BLOCK;
  *block_offset = start;
  return ro_crc32(0, c->entries - RO_HEADER_SIZE + start, (size_t)len) != c->index_crcs[start / RO_INDEX_BLOCK];
}

/* A miss is an answer only if the entries that decided it are as they were at open: the
 * blocks of the insertion point's neighbours and of the last entries the search compared. */
static int miss_checked(const ro_chunk *c, uint64_t pos, const visited_entries *seen, ro_hit *out) {
  if (c->index_crcs == NULL || c->count == 0) return RO_MISS;
  uint64_t cand[VISITED_MAX + 2];
  int n = 0;
  if (pos > 0) cand[n++] = pos - 1;
  if (pos < c->count) cand[n++] = pos;
  for (int j = 0; j < seen->n && j < VISITED_MAX; j++) cand[n++] = seen->at[j];
  uint64_t checked[VISITED_MAX + 2];
  int m = 0;
  for (int j = 0; j < n; j++) {
    uint64_t block = (RO_HEADER_SIZE + cand[j] * RO_ENTRY_SIZE) / RO_INDEX_BLOCK, offset;
    int done = 0;
    for (int k = 0; k < m && !done; k++) done = checked[k] == block;
    if (done) continue;
    checked[m++] = block;
    if (block_damaged(c, cand[j], &offset)) {
      out->record_offset = offset;
      return RO_E_INDEX;
    }
  }
  return RO_MISS;
}

int ro_locate(const ro_store *s, const uint8_t hash[16], ro_hit *out, uint64_t *pos) {
  uint32_t chunk = ro_chunk_slot(s, hash);
  out->probes = 0;
  if (chunk == RO_NOT_HELD) {
    /* Another node's partition: absent here, and chunk 0 keeps out->chunk a valid index. */
    out->chunk = 0;
    return RO_MISS;
  }
  const ro_chunk *c = &s->chunks[chunk];
  uint64_t prefix = ro_be64(hash);
  out->chunk = chunk;
  int order_error;
  visited_entries seen = {{0}, 0};
  *pos = search(s, c, prefix, &out->probes, &order_error, c->index_crcs != NULL ? &seen : NULL);
  if (order_error) {
    out->record_offset = *pos < c->count ? entry_offset(c, *pos) : 0;
    return RO_E_ORDER;
  }
  if (*pos >= c->count || entry_key(c, *pos) != prefix) return miss_checked(c, *pos, &seen, out);
  /* The record's header and the start of its key and value: the CRC reads the rest in order. */
  uint64_t off = entry_offset(c, *pos);
  if (off < c->data_size) {
    __builtin_prefetch(c->data + off);
    if (c->data_size - off > 64) __builtin_prefetch(c->data + off + 64);
  }
  return RO_HIT;
}

int ro_finish(const ro_store *s, const uint8_t *key, size_t len, const uint8_t hash[16], uint64_t pos, ro_hit *out) {
  const ro_chunk *c = &s->chunks[out->chunk];
  uint64_t prefix = ro_be64(hash);
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

int ro_lookup_hashed(const ro_store *s, const uint8_t *key, size_t len, const uint8_t hash[16], ro_hit *out) {
  uint64_t pos;
  int r = ro_locate(s, hash, out, &pos);
  return r == RO_HIT ? ro_finish(s, key, len, hash, pos, out) : r;
}

int ro_lookup(const ro_store *s, const uint8_t *key, size_t len, ro_hit *out) {
  uint8_t hash[16];
  ro_key_hash(s, key, len, hash);
  return ro_lookup_hashed(s, key, len, hash, out);
}
