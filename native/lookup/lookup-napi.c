/*
 * createLookup(spec) -> { get(keyLength), getMany(keys, ends, count, out),
 *                         frame(results, count, out, at, resp, absent, suffix),
 *                         getFramed(keyLength, out, at, resp, absent, suffix), close() }
 *
 * spec = { chunks: [{ index, count, data, dataSize, radix, radixBits }], key, out,
 *          binary, checkCrc, collideBits, partitions? }
 * partitions (format 2) = { count: P, slots: Int32Array(P) (-1: not held), chunks per
 * partition }: a key's chunk is its partition's slot times chunks plus its chunk, and a
 * key of a partition not held is a miss (lookup.h ro_chunk_slot).
 * `index` and `data` are the windows mapFile returned; `key` is a scratch Uint8Array the
 * caller writes each key into; `out` a Float64Array(8) receiving
 * [chunk, valueOffset, valueLength, probes, recordOffset]. The two functions share one
 * native struct that references every buffer it points into, so the mappings outlive
 * any lookup; the struct is freed when all three functions have been collected. close()
 * drops those references at once (later calls throw), so the windows can be collected
 * in the next garbage collection rather than in the one after the functions'.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lookup/lookup.h"
#include "napi-util.h"
#include "lookup/index-scan.h"
#include "memory/residency.h"

typedef struct {
  ro_store store;
  ro_chunk *chunks;
  int32_t *part_slots; /* a copy of spec.partitions.slots, or NULL */
  uint8_t *key;
  size_t key_cap;
  double *out;
  napi_ref *refs;
  uint32_t ref_count;
  int functions; /* functions alive */
  int closed;
} lookup_state;

static void drop_refs(napi_env env, lookup_state *st) {
  for (uint32_t i = 0; i < st->ref_count; i++)
    if (st->refs[i] != NULL) napi_delete_reference(env, st->refs[i]);
  free(st->refs);
  st->refs = NULL;
  st->ref_count = 0;
}

static void free_state(napi_env env, lookup_state *st) {
  drop_refs(env, st);
  free(st->chunks);
  free(st->part_slots);
  free(st);
}

static void function_finalize(napi_env env, void *data, void *hint) {
  (void)hint;
  lookup_state *st = data;
  if (--st->functions == 0) free_state(env, st);
}

static void write_hit(double *out, const ro_hit *h) {
  out[0] = h->chunk;
  out[1] = (double)h->value_offset;
  out[2] = (double)h->value_length;
  out[3] = h->probes;
  out[4] = (double)h->record_offset;
}

/* The optional last argument of get, getMany and getFramed: true asks for RO_COLD rather
 * than a read of a page not marked resident (lookup.h). */
static int cold_flag(napi_env env, size_t argc, size_t at, napi_value *argv) {
  bool cold = false;
  if (argc > at) napi_get_value_bool(env, argv[at], &cold);
  return cold;
}

/* get(keyLength, cold?): status (1 hit, 0 miss, 4 cold, < 0 damage), details in `out`. */
static napi_value get_fn(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], result;
  lookup_state *st;
  uint32_t len;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, (void **)&st) != napi_ok || argc < 1 ||
      napi_get_value_uint32(env, argv[0], &len) != napi_ok || len > st->key_cap)
    return ro_throw_type(env, "get(keyLength): keyLength must fit the key buffer");
  if (st->closed) return ro_throw_type(env, "get: the lookup is closed");
  st->store.cold_check = cold_flag(env, argc, 1, argv);
  ro_hit hit = {0};
  int status = ro_lookup(&st->store, st->key, len, &hit);
  write_hit(st->out, &hit);
  napi_create_int32(env, status, &result);
  return result;
}

typedef struct {
  uint64_t prefix;
  uint32_t chunk;
  uint32_t index;
} batch_item;

static inline int item_less(const batch_item *a, const batch_item *b) {
  return a->chunk != b->chunk ? a->chunk < b->chunk : a->prefix != b->prefix ? a->prefix < b->prefix : a->index < b->index;
}

static void sift_down(batch_item *a, size_t start, size_t n) {
  size_t root = start;
  for (;;) {
    size_t child = 2 * root + 1;
    if (child >= n) return;
    if (child + 1 < n && item_less(&a[child], &a[child + 1])) child++;
    if (!item_less(&a[root], &a[child])) return;
    batch_item t = a[root];
    a[root] = a[child];
    a[child] = t;
    root = child;
  }
}

/* Heapsort: O(n log n), no recursion, no extra memory. */
static void sort_items(batch_item *a, size_t n) {
  for (size_t i = n / 2; i-- > 0;) sift_down(a, i, n);
  for (size_t end = n; end-- > 1;) {
    batch_item t = a[0];
    a[0] = a[end];
    a[end] = t;
    sift_down(a, 0, end);
  }
}

/* Keys whose memory reads overlap in getMany: enough to keep a core's line-fill buffers
 * busy, few enough that a block's index lines are still cached when its records are read. */
#define LOOKUP_BLOCK 64

/*
 * getMany(keys, ends, count, out): key i is keys[ends[i-1] .. ends[i]) (ends[-1] = 0).
 * Keys are looked up in index order (chunk, then hash prefix), so a batch walks each
 * index and data file forward; out[4i .. 4i+3] = status, chunk, valueOffset (or the
 * damaged record's offset when status < 0), valueLength, in request order.
 */
static napi_value get_many_fn(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  lookup_state *st;
  uint8_t *keys;
  size_t keys_len, ends_len, out_len;
  uint32_t *ends, count;
  double *out;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, (void **)&st) != napi_ok || argc < 4 ||
      ro_get_bytes(env, argv[0], &keys, &keys_len) != 0 || ro_get_u32_array(env, argv[1], &ends, &ends_len) != 0 ||
      napi_get_value_uint32(env, argv[2], &count) != napi_ok || ro_get_f64_array(env, argv[3], &out, &out_len) != 0 ||
      count > ends_len || (size_t)count * 4 > out_len)
    return ro_throw_type(env, "getMany(keys: Uint8Array, ends: Uint32Array, count, out: Float64Array(4 * count))");
  if (st->closed) return ro_throw_type(env, "getMany: the lookup is closed");
  st->store.cold_check = cold_flag(env, argc, 4, argv);
  for (uint32_t i = 0, start = 0; i < count; start = ends[i], i++)
    if (ends[i] < start || ends[i] > keys_len) return ro_throw_type(env, "getMany: ends must be non-decreasing and within keys");
  if (count == 0) return NULL;
  batch_item *items = malloc((size_t)count * sizeof *items);
  uint8_t *hashes = malloc((size_t)count * 16);
  if (items == NULL || hashes == NULL) {
    free(items);
    free(hashes);
    return ro_throw_type(env, "getMany: out of memory");
  }
  for (uint32_t i = 0; i < count; i++) {
    uint32_t start = i == 0 ? 0 : ends[i - 1];
    uint8_t *h = hashes + (size_t)i * 16;
    ro_key_hash(&st->store, keys + start, ends[i] - start, h);
    items[i].prefix = ((uint64_t)h[0] << 56) | ((uint64_t)h[1] << 48) | ((uint64_t)h[2] << 40) | ((uint64_t)h[3] << 32) |
                      ((uint64_t)h[4] << 24) | ((uint64_t)h[5] << 16) | ((uint64_t)h[6] << 8) | h[7];
    items[i].chunk = ro_chunk_slot(&st->store, h); /* RO_NOT_HELD sorts last */
    items[i].index = i;
  }
  sort_items(items, count);
  /* In blocks, stage by stage (lookup.h): the index entries of a block are fetched
   * together, then its records, so their misses overlap instead of queueing. */
  for (uint32_t b = 0; b < count; b += LOOKUP_BLOCK) {
    uint32_t n = count - b < LOOKUP_BLOCK ? count - b : LOOKUP_BLOCK;
    batch_item *block = items + b;
    ro_hit hits[LOOKUP_BLOCK];
    uint64_t pos[LOOKUP_BLOCK];
    int status[LOOKUP_BLOCK];
    for (uint32_t j = 0; j < n; j++) ro_prefetch_entry(&st->store, hashes + (size_t)block[j].index * 16);
    for (uint32_t j = 0; j < n; j++) {
      memset(&hits[j], 0, sizeof hits[j]);
      status[j] = ro_locate(&st->store, hashes + (size_t)block[j].index * 16, &hits[j], &pos[j]);
    }
    for (uint32_t j = 0; j < n; j++) {
      uint32_t i = block[j].index;
      uint32_t start = i == 0 ? 0 : ends[i - 1];
      ro_hit *hit = &hits[j];
      if (status[j] == RO_HIT) status[j] = ro_finish(&st->store, keys + start, ends[i] - start, hashes + (size_t)i * 16, pos[j], hit);
      double *o = out + (size_t)i * 4;
      o[0] = status[j];
      o[1] = hit->chunk;
      o[2] = (double)(status[j] < 0 || status[j] == RO_COLD ? hit->record_offset : hit->value_offset);
      o[3] = (double)hit->value_length;
    }
  }
  free(items);
  free(hashes);
  return NULL;
}

/* Decimal digits of v written at p; returns how many. */
static size_t write_decimal(uint8_t *p, uint64_t v) {
  uint8_t tmp[20];
  size_t n = 0;
  do {
    tmp[n++] = (uint8_t)('0' + v % 10);
    v /= 10;
  } while (v > 0);
  for (size_t i = 0; i < n; i++) p[i] = tmp[n - 1 - i];
  return n;
}

/* Frames one answer at out[*at]: `absent`, or header, the value and `suffix`. 0, or -1
 * when out has no room for it (nothing written). Twin: writeFrame in value-framing.ts. */
static int frame_one(uint8_t *out, size_t out_len, size_t *at, int hit, const uint8_t *value, uint64_t len, int resp, const uint8_t *absent,
                     size_t absent_len, const uint8_t *suffix, size_t suffix_len) {
  size_t pos = *at;
  if (!hit) {
    if (out_len - pos < absent_len) return -1;
    memcpy(out + pos, absent, absent_len);
    *at = pos + absent_len;
    return 0;
  }
  uint8_t digits[20];
  size_t ndigits = resp ? write_decimal(digits, len) : 0;
  size_t header = resp ? 3 + ndigits : 4;
  if (out_len - pos < header || out_len - pos - header < len || out_len - pos - header - len < suffix_len) return -1;
  if (resp) {
    out[pos++] = '$';
    memcpy(out + pos, digits, ndigits);
    pos += ndigits;
    out[pos++] = '\r';
    out[pos++] = '\n';
  } else {
    out[pos++] = (uint8_t)(len >> 24);
    out[pos++] = (uint8_t)(len >> 16);
    out[pos++] = (uint8_t)(len >> 8);
    out[pos++] = (uint8_t)len;
  }
  memcpy(out + pos, value, (size_t)len);
  pos += (size_t)len;
  memcpy(out + pos, suffix, suffix_len);
  *at = pos + suffix_len;
  return 0;
}

/*
 * frame(results, count, out, at, resp, absent, suffix): writes the framed answers of a
 * getMany (its `out`: status, chunk, value offset, value length per key) into `out` from
 * `at`, copying each value straight from the mapped data file: per key the `absent` bytes,
 * or a length header (resp: `$<decimal>\r\n`; else u32 big-endian), the value and
 * `suffix`. Returns the offset after the last byte. The caller sized `out`
 * (formats/store/value-framing.ts); running past it, or a result naming bytes outside a
 * data file, throws before anything past the checked bound is written.
 */
static napi_value frame_fn(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7], result;
  lookup_state *st;
  double *res, at_d;
  size_t res_len, out_len, absent_len, suffix_len;
  uint8_t *out, *absent, *suffix;
  uint32_t count;
  bool resp;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, (void **)&st) != napi_ok || argc < 7 ||
      ro_get_f64_array(env, argv[0], &res, &res_len) != 0 || napi_get_value_uint32(env, argv[1], &count) != napi_ok ||
      ro_get_bytes(env, argv[2], &out, &out_len) != 0 || napi_get_value_double(env, argv[3], &at_d) != napi_ok ||
      napi_get_value_bool(env, argv[4], &resp) != napi_ok || ro_get_bytes(env, argv[5], &absent, &absent_len) != 0 ||
      ro_get_bytes(env, argv[6], &suffix, &suffix_len) != 0 || (size_t)count * 4 > res_len || !(at_d >= 0) || at_d > (double)out_len)
    return ro_throw_type(env, "frame(results: Float64Array, count, out: Uint8Array, at, resp: boolean, absent, suffix)");
  if (st->closed) return ro_throw_type(env, "frame: the lookup is closed");
  size_t at = (size_t)at_d;
  for (uint32_t i = 0; i < count; i++) {
    const double *r = res + (size_t)i * 4;
    const uint8_t *value = NULL;
    uint64_t len = 0;
    int hit = r[0] == RO_HIT;
    if (!hit && r[0] != RO_MISS) return ro_throw_type(env, "frame: a result that is neither a hit nor a miss");
    if (hit) {
      if (!(r[1] >= 0 && r[1] < st->store.chunk_count && r[2] >= 0 && r[3] >= 0)) return ro_throw_type(env, "frame: bad result");
      const ro_chunk *c = &st->store.chunks[(uint32_t)r[1]];
      uint64_t off = (uint64_t)r[2];
      len = (uint64_t)r[3];
      if (off > c->data_size || len > c->data_size - off) return ro_throw_type(env, "frame: result outside the data file");
      if (!resp && len > 0xffffffffu) return ro_throw_type(env, "frame: value too large for a u32 length header");
      value = c->data + off;
    }
    if (frame_one(out, out_len, &at, hit, value, len, resp, absent, absent_len, suffix, suffix_len) != 0)
      return ro_throw_type(env, "frame: out is too small");
  }
  napi_create_double(env, (double)at, &result);
  return result;
}

/*
 * getFramed(keyLength, out, at, resp, absent, suffix): get() of the key in the scratch
 * buffer, its answer framed at out[at] as frame() frames one (a GET reply written straight
 * into a connection's output). Returns the status; spec.out as get() leaves it, and
 * out[5] = the offset after the answer. RO_NEEDS_ROOM when `out` is too small from `at`
 * (nothing written; out[2] holds the value's length), so the caller grows it and asks again.
 */
enum { RO_NEEDS_ROOM = 3 };

static napi_value get_framed_fn(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7], result;
  lookup_state *st;
  uint32_t len;
  double at_d;
  size_t out_len, absent_len, suffix_len;
  uint8_t *out, *absent, *suffix;
  bool resp;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, (void **)&st) != napi_ok || argc < 6 ||
      napi_get_value_uint32(env, argv[0], &len) != napi_ok || len > st->key_cap || ro_get_bytes(env, argv[1], &out, &out_len) != 0 ||
      napi_get_value_double(env, argv[2], &at_d) != napi_ok || napi_get_value_bool(env, argv[3], &resp) != napi_ok ||
      ro_get_bytes(env, argv[4], &absent, &absent_len) != 0 || ro_get_bytes(env, argv[5], &suffix, &suffix_len) != 0 || !(at_d >= 0) ||
      at_d > (double)out_len)
    return ro_throw_type(env, "getFramed(keyLength, out: Uint8Array, at, resp: boolean, absent, suffix)");
  if (st->closed) return ro_throw_type(env, "getFramed: the lookup is closed");
  st->store.cold_check = cold_flag(env, argc, 6, argv);
  ro_hit hit = {0};
  int status = ro_lookup(&st->store, st->key, len, &hit);
  write_hit(st->out, &hit);
  size_t at = (size_t)at_d;
  if (status == RO_HIT || status == RO_MISS) {
    const ro_chunk *c = &st->store.chunks[hit.chunk];
    if (status == RO_HIT && !resp && hit.value_length > 0xffffffffu) return ro_throw_type(env, "getFramed: value too large for a u32 length header");
    if (frame_one(out, out_len, &at, status == RO_HIT, status == RO_HIT ? c->data + hit.value_offset : NULL, hit.value_length, resp, absent,
                  absent_len, suffix, suffix_len) != 0)
      status = RO_NEEDS_ROOM;
  }
  st->out[5] = (double)at;
  napi_create_int32(env, status, &result);
  return result;
}

/* close(): drops the references to the mapped windows; get and getMany throw after it. */
static napi_value close_fn(napi_env env, napi_callback_info info) {
  lookup_state *st;
  if (napi_get_cb_info(env, info, NULL, NULL, NULL, (void **)&st) != napi_ok) return NULL;
  if (!st->closed) {
    st->closed = 1;
    drop_refs(env, st);
  }
  return NULL;
}

/* Reads one chunk spec into *c, referencing its buffers in st->refs from *next on. */
static int read_chunk(napi_env env, napi_value spec, ro_chunk *c, lookup_state *st, uint32_t *next) {
  napi_value index, data, radix, resident;
  napi_valuetype resident_type = napi_undefined;
  uint8_t *ibase, *dbase;
  uint64_t isize, dsize, count, data_size, bits = 0;
  uint32_t iwin, dwin;
  napi_valuetype radix_type;
  if (napi_get_named_property(env, spec, "index", &index) != napi_ok || napi_get_named_property(env, spec, "data", &data) != napi_ok ||
      napi_get_named_property(env, spec, "radix", &radix) != napi_ok || napi_typeof(env, radix, &radix_type) != napi_ok ||
      ro_get_named_u64(env, spec, "count", &count) != 0 || ro_get_named_u64(env, spec, "dataSize", &data_size) != 0 ||
      ro_get_windows(env, index, &ibase, &isize, &iwin) != 0 || ro_get_windows(env, data, &dbase, &dsize, &dwin) != 0)
    return -1;
  if (isize < 64 || (isize - 64) / 16 < count || dsize != data_size) return -1;
  c->entries = ibase + 64;
  c->count = count;
  c->data = dbase;
  c->data_size = data_size;
  c->radix = NULL;
  c->radix_bits = 0;
  c->resident = NULL;
  c->index_crcs = NULL;
  napi_value crcs;
  napi_valuetype crcs_type = napi_undefined;
  if (napi_get_named_property(env, spec, "indexCrcs", &crcs) == napi_ok && napi_typeof(env, crcs, &crcs_type) == napi_ok &&
      crcs_type != napi_null && crcs_type != napi_undefined) {
    uint32_t *v;
    size_t vlen;
    if (ro_get_u32_array(env, crcs, &v, &vlen) != 0 || vlen < (isize + RO_INDEX_BLOCK - 1) / RO_INDEX_BLOCK) return -1;
    c->index_crcs = v;
    if (napi_create_reference(env, crcs, 1, &st->refs[(*next)++]) != napi_ok) return -1;
  }
  if (napi_get_named_property(env, spec, "resident", &resident) == napi_ok && napi_typeof(env, resident, &resident_type) == napi_ok &&
      resident_type != napi_null && resident_type != napi_undefined) {
    uint8_t *vec;
    size_t vlen;
    if (ro_get_bytes(env, resident, &vec, &vlen) != 0 || vlen < ro_pages_of(data_size)) return -1;
    c->resident = vec;
    if (napi_create_reference(env, resident, 1, &st->refs[(*next)++]) != napi_ok) return -1;
  }
  if (radix_type != napi_null && radix_type != napi_undefined) {
    uint32_t *r;
    size_t rlen;
    if (ro_get_named_u64(env, spec, "radixBits", &bits) != 0 || bits < 1 || bits > 24 || ro_get_u32_array(env, radix, &r, &rlen) != 0 ||
        rlen != ((size_t)1 << bits) + 1)
      return -1;
    c->radix = r;
    c->radix_bits = (int)bits;
    if (napi_create_reference(env, radix, 1, &st->refs[(*next)++]) != napi_ok) return -1;
  }
  if (ro_ref_windows(env, index, st->refs + *next, iwin) != 0) return -1;
  *next += iwin;
  if (ro_ref_windows(env, data, st->refs + *next, dwin) != 0) return -1;
  *next += dwin;
  return 0;
}

static uint32_t windows_count(napi_env env, napi_value spec, const char *name) {
  napi_value v;
  uint32_t n = 0;
  if (napi_get_named_property(env, spec, name, &v) == napi_ok) napi_get_array_length(env, v, &n);
  return n;
}

/* Reads spec.partitions, if any, into st (a copy of the slots). 0, or -1 when malformed. */
static int read_partitions(napi_env env, napi_value spec, lookup_state *st, uint32_t chunk_count) {
  napi_value parts, slots;
  napi_valuetype type = napi_undefined;
  if (napi_get_named_property(env, spec, "partitions", &parts) != napi_ok || napi_typeof(env, parts, &type) != napi_ok) return -1;
  if (type == napi_undefined || type == napi_null) return 0;
  uint64_t count, chunks;
  int32_t *v;
  size_t n;
  if (ro_get_named_u64(env, parts, "count", &count) != 0 || ro_get_named_u64(env, parts, "chunks", &chunks) != 0 ||
      napi_get_named_property(env, parts, "slots", &slots) != napi_ok || ro_get_i32_array(env, slots, &v, &n) != 0 || count == 0 ||
      count > UINT32_MAX || n != count || chunks == 0 || chunk_count % chunks != 0)
    return -1;
  /* Every slot names a whole run of chunks: no lookup can index past st->chunks. */
  for (size_t p = 0; p < n; p++)
    if (v[p] < -1 || (v[p] >= 0 && (uint64_t)v[p] >= chunk_count / chunks)) return -1;
  st->part_slots = malloc(n * sizeof *st->part_slots);
  if (st->part_slots == NULL) return -1;
  memcpy(st->part_slots, v, n * sizeof *st->part_slots);
  st->store.part_slots = st->part_slots;
  st->store.part_count = (uint32_t)count;
  st->store.part_chunks = (uint32_t)chunks;
  return 0;
}

static napi_value create_lookup_fn(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value spec, chunks, key, out, collide;
  uint32_t chunk_count;
  int32_t collide_bits;
  int binary, check_crc;
  if (napi_get_cb_info(env, info, &argc, &spec, NULL, NULL) != napi_ok || argc < 1 ||
      napi_get_named_property(env, spec, "chunks", &chunks) != napi_ok || napi_get_array_length(env, chunks, &chunk_count) != napi_ok ||
      chunk_count == 0 || napi_get_named_property(env, spec, "key", &key) != napi_ok ||
      napi_get_named_property(env, spec, "out", &out) != napi_ok || napi_get_named_property(env, spec, "collideBits", &collide) != napi_ok ||
      napi_get_value_int32(env, collide, &collide_bits) != napi_ok || collide_bits < -1 || collide_bits > 8 ||
      ro_get_named_bool(env, spec, "binary", &binary) != 0 || ro_get_named_bool(env, spec, "checkCrc", &check_crc) != 0)
    return ro_throw_type(env, "createLookup: bad spec");
  lookup_state *st = calloc(1, sizeof *st);
  if (st == NULL) return ro_throw_type(env, "createLookup: out of memory");
  uint32_t refs = 2;
  for (uint32_t i = 0; i < chunk_count; i++) {
    napi_value c;
    if (napi_get_element(env, chunks, i, &c) != napi_ok) break;
    refs += 3 + windows_count(env, c, "index") + windows_count(env, c, "data");
  }
  st->chunks = calloc(chunk_count, sizeof *st->chunks);
  st->refs = calloc(refs, sizeof *st->refs);
  st->ref_count = refs;
  size_t out_len;
  uint32_t next = 0;
  int ok = st->chunks != NULL && st->refs != NULL && ro_get_bytes(env, key, &st->key, &st->key_cap) == 0 &&
           ro_get_f64_array(env, out, &st->out, &out_len) == 0 && out_len >= 8 && napi_create_reference(env, key, 1, &st->refs[next++]) == napi_ok &&
           napi_create_reference(env, out, 1, &st->refs[next++]) == napi_ok && read_partitions(env, spec, st, chunk_count) == 0;
  for (uint32_t i = 0; ok && i < chunk_count; i++) {
    napi_value c;
    ok = napi_get_element(env, chunks, i, &c) == napi_ok && read_chunk(env, c, &st->chunks[i], st, &next) == 0;
  }
  if (!ok) {
    free_state(env, st);
    return ro_throw_type(env, "createLookup: bad spec (chunk windows, sizes, radix, partitions, key or out buffer)");
  }
  st->store.chunks = st->chunks;
  st->store.chunk_count = chunk_count;
  st->store.binary = binary;
  st->store.check_crc = check_crc;
  st->store.collide_bits = collide_bits;
  st->store.page_shift = ro_page_shift();
  napi_value result, get, get_many, close;
  if (napi_create_object(env, &result) != napi_ok ||
      napi_create_function(env, "get", NAPI_AUTO_LENGTH, get_fn, st, &get) != napi_ok) {
    free_state(env, st);
    return ro_throw_type(env, "createLookup: cannot create functions");
  }
  st->functions = 1;
  napi_add_finalizer(env, get, st, function_finalize, NULL, NULL);
  if (napi_create_function(env, "getMany", NAPI_AUTO_LENGTH, get_many_fn, st, &get_many) == napi_ok) {
    st->functions++;
    napi_add_finalizer(env, get_many, st, function_finalize, NULL, NULL);
    napi_set_named_property(env, result, "getMany", get_many);
  }
  napi_value get_framed;
  if (napi_create_function(env, "getFramed", NAPI_AUTO_LENGTH, get_framed_fn, st, &get_framed) == napi_ok) {
    st->functions++;
    napi_add_finalizer(env, get_framed, st, function_finalize, NULL, NULL);
    napi_set_named_property(env, result, "getFramed", get_framed);
  }
  napi_value frame;
  if (napi_create_function(env, "frame", NAPI_AUTO_LENGTH, frame_fn, st, &frame) == napi_ok) {
    st->functions++;
    napi_add_finalizer(env, frame, st, function_finalize, NULL, NULL);
    napi_set_named_property(env, result, "frame", frame);
  }
  if (napi_create_function(env, "close", NAPI_AUTO_LENGTH, close_fn, st, &close) == napi_ok) {
    st->functions++;
    napi_add_finalizer(env, close, st, function_finalize, NULL, NULL);
    napi_set_named_property(env, result, "close", close);
  }
  napi_set_named_property(env, result, "get", get);
  return result;
}

int ro_register_lookup(napi_env env, napi_value exports) { return ro_set_function(env, exports, "createLookup", create_lookup_fn); }
