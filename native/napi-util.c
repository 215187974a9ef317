#include "napi-util.h"
#include "memory/unaccounted-window.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

napi_value ro_throw_type(napi_env env, const char *msg) {
  napi_throw_type_error(env, NULL, msg);
  return NULL;
}

static int typed_array_info(napi_env env, napi_value v, napi_typedarray_type *type, size_t *length, void **data) {
  bool is_ta = false;
  if (napi_is_typedarray(env, v, &is_ta) != napi_ok || !is_ta) return -1;
  napi_value ab;
  size_t offset;
  if (napi_get_typedarray_info(env, v, type, length, data, &ab, &offset) != napi_ok) return -1;
  return 0;
}

int ro_get_bytes(napi_env env, napi_value v, uint8_t **data, size_t *len) {
  napi_typedarray_type type;
  size_t length;
  void *p;
  if (typed_array_info(env, v, &type, &length, &p) != 0) return -1;
  size_t width = 1;
  switch (type) {
    case napi_int8_array:
    case napi_uint8_array:
    case napi_uint8_clamped_array:
      width = 1;
      break;
    case napi_int16_array:
    case napi_uint16_array:
      width = 2;
      break;
    case napi_int32_array:
    case napi_uint32_array:
    case napi_float32_array:
      width = 4;
      break;
    default:
      width = 8;
      break;
  }
  *data = (uint8_t *)p;
  *len = length * width;
  return 0;
}

int ro_get_u32_array(napi_env env, napi_value v, uint32_t **data, size_t *count) {
  napi_typedarray_type type;
  void *p;
  if (typed_array_info(env, v, &type, count, &p) != 0 || type != napi_uint32_array) return -1;
  *data = (uint32_t *)p;
  return 0;
}

int ro_get_i32_array(napi_env env, napi_value v, int32_t **data, size_t *count) {
  napi_typedarray_type type;
  void *p;
  if (typed_array_info(env, v, &type, count, &p) != 0 || type != napi_int32_array) return -1;
  *data = (int32_t *)p;
  return 0;
}

int ro_get_f64_array(napi_env env, napi_value v, double **data, size_t *count) {
  napi_typedarray_type type;
  void *p;
  if (typed_array_info(env, v, &type, count, &p) != 0 || type != napi_float64_array) return -1;
  *data = (double *)p;
  return 0;
}

int ro_get_windows(napi_env env, napi_value array, uint8_t **base, uint64_t *total, uint32_t *count) {
  bool is_array = false;
  if (napi_is_array(env, array, &is_array) != napi_ok || !is_array) return -1;
  if (napi_get_array_length(env, array, count) != napi_ok) return -1;
  *base = NULL;
  *total = 0;
  for (uint32_t i = 0; i < *count; i++) {
    napi_value ab;
    uint8_t *p;
    size_t len;
    if (napi_get_element(env, array, i, &ab) != napi_ok) return -1;
    if (ro_window_bytes(env, ab, &p, &len) != 0) return -1;
    if (i == 0) *base = p;
    else if (p != *base + *total) return -1; /* not one contiguous range */
    *total += len;
  }
  return 0;
}

int ro_ref_windows(napi_env env, napi_value array, napi_ref *refs, uint32_t count) {
  for (uint32_t i = 0; i < count; i++) {
    napi_value ab;
    if (napi_get_element(env, array, i, &ab) != napi_ok) return -1;
    if (napi_create_reference(env, ab, 1, &refs[i]) != napi_ok) return -1;
  }
  return 0;
}

int ro_get_named_u64(napi_env env, napi_value obj, const char *name, uint64_t *out) {
  napi_value v;
  double d;
  if (napi_get_named_property(env, obj, name, &v) != napi_ok) return -1;
  if (napi_get_value_double(env, v, &d) != napi_ok) return -1;
  if (!(d >= 0 && d <= 9007199254740991.0) || d != (double)(uint64_t)d) return -1;
  *out = (uint64_t)d;
  return 0;
}

int ro_get_named_bool(napi_env env, napi_value obj, const char *name, int *out) {
  napi_value v;
  bool b;
  if (napi_get_named_property(env, obj, name, &v) != napi_ok) return -1;
  if (napi_get_value_bool(env, v, &b) != napi_ok) return -1;
  *out = b ? 1 : 0;
  return 0;
}

int ro_set_function(napi_env env, napi_value exports, const char *name, napi_callback cb) {
  napi_value fn;
  if (napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, NULL, &fn) != napi_ok) return -1;
  return napi_set_named_property(env, exports, name, fn) == napi_ok ? 0 : -1;
}

/* The name of an errno value, as Node names them in error codes. */
static const char *errno_code(int err) {
  switch (err) {
    case ENOENT: return "ENOENT";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EINVAL: return "EINVAL";
    case ENOMEM: return "ENOMEM";
    case EFBIG: return "EFBIG";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case ENODEV: return "ENODEV";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case ELOOP: return "ELOOP";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case EOVERFLOW: return "EOVERFLOW";
    case EAGAIN: return "EAGAIN";
    case EIO: return "EIO";
    case EEXIST: return "EEXIST";
    case ENOSPC: return "ENOSPC";
    case EROFS: return "EROFS";
    case EDQUOT: return "EDQUOT";
    case EBUSY: return "EBUSY";
    case EXDEV: return "EXDEV";
    case ENOTEMPTY: return "ENOTEMPTY";
    case EINTR: return "EINTR";
    default: return "EUNKNOWN";
  }
}

napi_value ro_errno_error(napi_env env, int err) {
  napi_value code, msg, error, errnum;
  napi_create_string_utf8(env, errno_code(err), NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, strerror(err), NAPI_AUTO_LENGTH, &msg);
  napi_create_error(env, code, msg, &error);
  napi_create_int32(env, err, &errnum);
  napi_set_named_property(env, error, "errno", errnum);
  return error;
}

int ro_get_string(napi_env env, napi_value v, char **out) {
  size_t len;
  *out = NULL;
  if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok) return RO_STRING_NOT_STRING;
  char *s = malloc(len + 1);
  if (s == NULL) return RO_STRING_NO_MEMORY;
  napi_get_value_string_utf8(env, v, s, len + 1, &len);
  if (strlen(s) != len) {
    free(s);
    return RO_STRING_HAS_NUL;
  }
  *out = s;
  return 0;
}

napi_value ro_number(napi_env env, double v) {
  napi_value result;
  if (napi_create_double(env, v, &result) != napi_ok) return NULL;
  return result;
}
