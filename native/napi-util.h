/* Small helpers shared by the N-API glue files: argument checks that throw and return. */
#ifndef RO_NAPI_UTIL_H
#define RO_NAPI_UTIL_H

#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h>
#include <stdint.h>

/* Throws a TypeError (a caller's mistake: the loader passes well-formed arguments). */
napi_value ro_throw_type(napi_env env, const char *msg);

/* A JavaScript number; NULL (with a pending exception) when N-API fails. */
napi_value ro_number(napi_env env, double v);

/* The bytes of a Uint8Array / Buffer (any TypedArray: its bytes). 0 on success. */
int ro_get_bytes(napi_env env, napi_value v, uint8_t **data, size_t *len);

/* A Uint32Array or Float64Array's elements; 0 on success, -1 on a wrong type. */
int ro_get_u32_array(napi_env env, napi_value v, uint32_t **data, size_t *count);
int ro_get_i32_array(napi_env env, napi_value v, int32_t **data, size_t *count);
int ro_get_f64_array(napi_env env, napi_value v, double **data, size_t *count);

/* An array of (Shared)ArrayBuffers that are consecutive windows of one memory range (as mapFile
 * returns them): the first byte and the total length. 0 on success, -1 otherwise. */
int ro_get_windows(napi_env env, napi_value array, uint8_t **base, uint64_t *total, uint32_t *count);

/* Strong references to each ArrayBuffer of a windows array; `refs` holds *count slots. */
int ro_ref_windows(napi_env env, napi_value array, napi_ref *refs, uint32_t count);

int ro_get_named_u64(napi_env env, napi_value obj, const char *name, uint64_t *out);
int ro_get_named_bool(napi_env env, napi_value obj, const char *name, int *out);

/* Registration of each glue file's functions on the exports object. */
int ro_register_basic(napi_env env, napi_value exports);
int ro_register_map(napi_env env, napi_value exports);
int ro_register_scan(napi_env env, napi_value exports);
int ro_register_lookup(napi_env env, napi_value exports);
int ro_register_batch(napi_env env, napi_value exports);
int ro_register_zstd(napi_env env, napi_value exports);
int ro_register_snappy(napi_env env, napi_value exports);
int ro_register_anon(napi_env env, napi_value exports);
int ro_register_socket(napi_env env, napi_value exports);
int ro_register_durable(napi_env env, napi_value exports);
int ro_register_residency(napi_env env, napi_value exports);
int ro_register_drop_behind(napi_env env, napi_value exports);
int ro_register_job_priority(napi_env env, napi_value exports);
int ro_register_uring(napi_env env, napi_value exports);

int ro_set_function(napi_env env, napi_value exports, const char *name, napi_callback cb);

/* The Error the jobs reject with for errno `err`: message strerror(err), `code` its name
 * ("ENOENT"; "EUNKNOWN" for the ones not listed), `errno` the number. */
napi_value ro_errno_error(napi_env env, int err);

/* A copy of a string argument in *out (free() it), NULL on failure: 0, or why it failed. */
enum { RO_STRING_NOT_STRING = -1, RO_STRING_HAS_NUL = -2, RO_STRING_NO_MEMORY = -3 };
int ro_get_string(napi_env env, napi_value v, char **out);

#endif
