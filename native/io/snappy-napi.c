/* snappyDecode(src, dst): number -- a snappy block (raw format) into dst, which must hold
 * exactly its declared length: 0, or -1 when src is not a valid block of that length.
 * The lookups of snappy stores decode here in one call, where the npm package's binding
 * costs several times the decoding itself. */
#include "io/snappy.h"
#include "napi-util.h"

static napi_value snappy_decode_napi(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  uint8_t *src, *dst;
  size_t src_len, dst_len;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2 || ro_get_bytes(env, argv[0], &src, &src_len) != 0 ||
      ro_get_bytes(env, argv[1], &dst, &dst_len) != 0)
    return ro_throw_type(env, "snappyDecode(src, dst)");
  return ro_number(env, ro_snappy_decode(src, src_len, dst, dst_len));
}

int ro_register_snappy(napi_env env, napi_value exports) {
  return ro_set_function(env, exports, "snappyDecode", snappy_decode_napi);
}
