/*
 * sendNow(fd, bytes): one non-blocking send(2) of a reply on a connected socket that has
 * nothing queued in Node (the caller checks). Returns the bytes the kernel took (possibly
 * fewer than asked) or -errno. Node's own write path for the same bytes allocates a write
 * request, runs the stream machinery and its callbacks; on an unpipelined GET load that is
 * a measurable share of a request's CPU (bench/RESULTS.md, section 3b).
 * MSG_NOSIGNAL: a peer that went away gives EPIPE, never SIGPIPE.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "napi-util.h"

static napi_value send_now_fn(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t fd;
  uint8_t *data;
  size_t len;
  napi_value result;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2) return ro_throw_type(env, "sendNow(fd, bytes)");
  if (napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0) return ro_throw_type(env, "sendNow: fd must be a descriptor");
  if (ro_get_bytes(env, argv[1], &data, &len) != 0) return ro_throw_type(env, "sendNow: bytes must be a Uint8Array");
  ssize_t n;
  do {
    n = send(fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (napi_create_int32(env, n < 0 ? -errno : (int32_t)n, &result) != napi_ok) return NULL;
  return result;
}

int ro_register_socket(napi_env env, napi_value exports) { return ro_set_function(env, exports, "sendNow", send_now_fn); }
