/*
 * Batch work for the builder: one call hashes or checksums many byte ranges of
 * one buffer, or packs a batch's records into the sort buffer, so a build pays the N-API
 * crossing once per few thousand records instead of once per record. The ranges are [starts[i], ends[i]) of `src`; every range
 * is checked against the buffer before any byte is read.
 */
#include <string.h>

#include "hash/crc32.h"
#include "hash/md5.h"
#include "napi-util.h"

/* The shared arguments: src, starts, ends, count, all bounds checked. 0 on success. */
static int batch_args(napi_env env, napi_value *argv, uint8_t **src, uint32_t **starts, uint32_t **ends, uint32_t *count,
                      const char **why) {
  size_t src_len, n_starts, n_ends;
  *why = "src must be a Uint8Array, starts and ends Uint32Arrays, count a number";
  if (ro_get_bytes(env, argv[0], src, &src_len) != 0 || ro_get_u32_array(env, argv[1], starts, &n_starts) != 0 ||
      ro_get_u32_array(env, argv[2], ends, &n_ends) != 0 || napi_get_value_uint32(env, argv[3], count) != napi_ok)
    return -1;
  *why = "count exceeds the starts or ends arrays";
  if (*count > n_starts || *count > n_ends) return -1;
  *why = "a range lies outside src";
  for (uint32_t i = 0; i < *count; i++)
    if ((*starts)[i] > (*ends)[i] || (*ends)[i] > src_len) return -1;
  return 0;
}

/* md5Batch(src, starts, ends, count, out: Uint8Array): out[16i..16i+16) = MD5 of range i. */
static napi_value md5_batch_fn(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  uint8_t *src, *out;
  uint32_t *starts, *ends, count;
  size_t out_len;
  const char *why;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 5)
    return ro_throw_type(env, "md5Batch(src, starts, ends, count, out)");
  if (batch_args(env, argv, &src, &starts, &ends, &count, &why) != 0) return ro_throw_type(env, why);
  if (ro_get_bytes(env, argv[4], &out, &out_len) != 0 || out_len / 16 < count)
    return ro_throw_type(env, "md5Batch: out must hold 16 bytes per range");
  for (uint32_t i = 0; i < count; i++) ro_md5(src + starts[i], ends[i] - starts[i], out + 16 * (size_t)i);
  return NULL;
}

/* crc32Batch(src, starts, ends, count, out: Uint32Array): out[i] = zlib's crc32(0, range i). */
static napi_value crc32_batch_fn(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  uint8_t *src;
  uint32_t *starts, *ends, count, *out;
  size_t out_count;
  const char *why;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 5)
    return ro_throw_type(env, "crc32Batch(src, starts, ends, count, out)");
  if (batch_args(env, argv, &src, &starts, &ends, &count, &why) != 0) return ro_throw_type(env, why);
  if (ro_get_u32_array(env, argv[4], &out, &out_count) != 0 || out_count < count)
    return ro_throw_type(env, "crc32Batch: out must be a Uint32Array of at least count elements");
  for (uint32_t i = 0; i < count; i++) out[i] = ro_crc32(0, src + starts[i], ends[i] - starts[i]);
  return NULL;
}

/* Big-endian stores: the mapped-record header is compared and routed big-endian. */
static void put_u32be(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

static void put_f64be(uint8_t *p, double v) {
  uint64_t bits;
  memcpy(&bits, &v, 8);
  for (int i = 7; i >= 0; i--, bits >>= 8) p[i] = (uint8_t)bits;
}

static uint32_t get_u32be(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

#define MAPPED_HEADER 48

/*
 * packMapped(arena, state, positions, buckets, his, los, hashes, src, keyStart, keyEnd,
 *            valueStart, valueEnd, order, line, fileIndex, entryRecord, entryBucket, from, to)
 *   -> the first entry not added (to when all fit).
 * SortBuffer.addRaw for entries [from, to): entry j is record entryRecord[j] of the batch
 * (its key and value ranges in src, its hash at hashes[16r]) going to bucket entryBucket[j].
 * Each is written at arena[state[0]] as bucket, hash, fileIndex, order, line, key length,
 * value length (big-endian), key, value; its position, bucket and hash prefixes go to
 * positions/buckets/his/los[state[1]]; state[0] and state[1] advance. Stops at the first
 * entry that does not fit (arena bytes or record slots). Twin: SortBuffer.addEntriesJs.
 */
static napi_value pack_mapped_fn(napi_env env, napi_callback_info info) {
  size_t argc = 19;
  napi_value argv[19];
  uint8_t *arena, *hashes, *src;
  double *state, *order, *line;
  uint32_t *positions, *buckets, *his, *los, *ks, *ke, *vs, *ve, *erec, *ebucket;
  size_t arena_len, state_n, pos_n, b_n, his_n, los_n, hashes_len, src_len, ks_n, ke_n, vs_n, ve_n, order_n, line_n, erec_n, eb_n;
  uint32_t file_index, from, to;
  napi_value result;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 19) return ro_throw_type(env, "packMapped: 19 arguments");
  if (ro_get_bytes(env, argv[0], &arena, &arena_len) != 0 || ro_get_f64_array(env, argv[1], &state, &state_n) != 0 || state_n < 2 ||
      ro_get_u32_array(env, argv[2], &positions, &pos_n) != 0 || ro_get_u32_array(env, argv[3], &buckets, &b_n) != 0 ||
      ro_get_u32_array(env, argv[4], &his, &his_n) != 0 || ro_get_u32_array(env, argv[5], &los, &los_n) != 0 ||
      ro_get_bytes(env, argv[6], &hashes, &hashes_len) != 0 || ro_get_bytes(env, argv[7], &src, &src_len) != 0 ||
      ro_get_u32_array(env, argv[8], &ks, &ks_n) != 0 || ro_get_u32_array(env, argv[9], &ke, &ke_n) != 0 ||
      ro_get_u32_array(env, argv[10], &vs, &vs_n) != 0 || ro_get_u32_array(env, argv[11], &ve, &ve_n) != 0 ||
      ro_get_f64_array(env, argv[12], &order, &order_n) != 0 || ro_get_f64_array(env, argv[13], &line, &line_n) != 0 ||
      napi_get_value_uint32(env, argv[14], &file_index) != napi_ok || ro_get_u32_array(env, argv[15], &erec, &erec_n) != 0 ||
      ro_get_u32_array(env, argv[16], &ebucket, &eb_n) != 0 || napi_get_value_uint32(env, argv[17], &from) != napi_ok ||
      napi_get_value_uint32(env, argv[18], &to) != napi_ok)
    return ro_throw_type(env, "packMapped: wrong argument types");
  size_t slots = pos_n;
  if (b_n < slots) slots = b_n;
  if (his_n < slots) slots = his_n;
  if (los_n < slots) slots = los_n;
  size_t records = ks_n;
  if (ke_n < records) records = ke_n;
  if (vs_n < records) records = vs_n;
  if (ve_n < records) records = ve_n;
  if (order_n < records) records = order_n;
  if (line_n < records) records = line_n;
  if (hashes_len / 16 < records) records = hashes_len / 16;
  if (from > to || to > erec_n || to > eb_n) return ro_throw_type(env, "packMapped: entries out of range");
  double used_d = state[0], count_d = state[1];
  if (!(used_d >= 0 && used_d <= (double)arena_len && count_d >= 0 && count_d <= (double)slots))
    return ro_throw_type(env, "packMapped: bad state");
  size_t used = (size_t)used_d, count = (size_t)count_d;
  uint32_t j = from;
  for (; j < to; j++) {
    uint32_t r = erec[j];
    if (r >= records || ks[r] > ke[r] || ke[r] > src_len || vs[r] > ve[r] || ve[r] > src_len)
      return ro_throw_type(env, "packMapped: a record range lies outside src");
    size_t key_len = ke[r] - ks[r], value_len = ve[r] - vs[r];
    size_t size = MAPPED_HEADER + key_len + value_len;
    if (count == slots || size > arena_len - used) break;
    uint8_t *a = arena + used;
    const uint8_t *h = hashes + 16 * (size_t)r;
    put_u32be(a, ebucket[j]);
    memcpy(a + 4, h, 16);
    put_u32be(a + 20, file_index);
    put_f64be(a + 24, order[r]);
    put_f64be(a + 32, line[r]);
    put_u32be(a + 40, (uint32_t)key_len);
    put_u32be(a + 44, (uint32_t)value_len);
    memcpy(a + MAPPED_HEADER, src + ks[r], key_len);
    memcpy(a + MAPPED_HEADER + key_len, src + vs[r], value_len);
    positions[count] = (uint32_t)used;
    buckets[count] = ebucket[j];
    his[count] = get_u32be(h);
    los[count] = get_u32be(h + 4);
    used += size;
    count++;
  }
  state[0] = (double)used;
  state[1] = (double)count;
  if (napi_create_uint32(env, j, &result) != napi_ok) return NULL;
  return result;
}

int ro_register_batch(napi_env env, napi_value exports) {
  if (ro_set_function(env, exports, "packMapped", pack_mapped_fn) != 0) return -1;
  if (ro_set_function(env, exports, "md5Batch", md5_batch_fn) != 0) return -1;
  if (ro_set_function(env, exports, "crc32Batch", crc32_batch_fn) != 0) return -1;
  return 0;
}
