/* Windows of a mapping that V8 does not count as external memory (see the .cc file). */
#ifndef RO_UNACCOUNTED_WINDOW_H
#define RO_UNACCOUNTED_WINDOW_H

#include <node_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Called once when the window's last reference is collected, on any thread. */
typedef void (*ro_window_release)(void *ctx);

/* A SharedArrayBuffer over [base, base + length); `release(ctx)` runs when it is
 * collected. NULL on failure (then `release` is never called). */
napi_value ro_unaccounted_window(napi_env env, uint8_t *base, size_t length, ro_window_release release, void *ctx);

/* The bytes of an ArrayBuffer or SharedArrayBuffer; 0, or -1 for any other value. */
int ro_window_bytes(napi_env env, napi_value value, uint8_t **data, size_t *length);

/* releaseMappings(): asks V8 for one incremental collection (a version was retired). */
napi_value ro_release_mappings_fn(napi_env env, napi_callback_info info);

#ifdef __cplusplus
}
#endif

#endif
