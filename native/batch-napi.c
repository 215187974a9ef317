/*
 * Batch hashing for the builder (issue 12): one call hashes or checksums many byte
 * ranges of one buffer, so a build pays the N-API crossing once per few thousand records
 * instead of once per record. The ranges are [starts[i], ends[i]) of `src`; every range
 * is checked against the buffer before any byte is read.
 */
#include "crc32.h"
#include "md5.h"
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

int ro_register_batch(napi_env env, napi_value exports) {
  if (ro_set_function(env, exports, "md5Batch", md5_batch_fn) != 0) return -1;
  if (ro_set_function(env, exports, "crc32Batch", crc32_batch_fn) != 0) return -1;
  return 0;
}
