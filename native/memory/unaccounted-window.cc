/*
 * Windows of a mapping as SharedArrayBuffers whose bytes V8 does not count as external
 * memory.
 *
 * V8 adds every ArrayBuffer backing store it is handed (napi_create_external_arraybuffer
 * included) to its count of external memory, and starts a full garbage collection
 * whenever that count grows by 64 MiB; past half the heap limit it collects at once,
 * on the caller's stack. Mapped store files are file pages the kernel can drop at any
 * time, not memory a collection could give back, so counting them was pure cost: opening
 * a 2 GiB version ran about ten full collections in every serving thread, and reads
 * stalled during every swap. V8 leaves shared backing stores out of that count
 * (BackingStore::PerIsolateAccountingLength), so the windows are SharedArrayBuffers.
 * Buffer.from, typed arrays, DataView, sockets, files, crypto and TextDecoder accept them.
 *
 * This is the one C++ file of the addon: N-API has no way to create a SharedArrayBuffer
 * over memory it does not own, so it uses V8's API, which ties the build to the Node
 * version it was compiled for (node-gyp builds it at install; the pure-JS reader remains
 * the fallback when it cannot load). napi_value and v8::Local<v8::Value> are the same
 * pointer in every Node release that has N-API (node's js_native_api_v8.h converts them
 * with a plain copy); the static_assert below keeps that assumption visible.
 *
 * Without that count, nothing makes V8 collect soon after a version is retired, and its
 * mapping (deleted files included, with their disk blocks) would stay until the next full
 * collection, whenever the heap's own growth asks for one. So a reader's close() calls
 * releaseMappings(): a moderate memory-pressure notification, which starts one
 * incremental (mostly concurrent) collection instead of the many full ones the count did.
 *
 * The deleter runs when the last SharedArrayBuffer of the backing store is collected,
 * possibly on one of V8's background threads (or in another isolate, if a worker was
 * handed a value): `release` must be thread-safe.
 */
#include <node_api.h>
#include <v8.h>

#include <cstring>
#include <memory>

#include "memory/unaccounted-window.h"

static_assert(sizeof(napi_value) == sizeof(v8::Local<v8::Value>), "napi_value is a v8::Local");

namespace {

struct DeleterData {
  ro_window_release release;
  void *ctx;
};

void delete_window(void *data, size_t length, void *deleter_data) {
  (void)data;
  (void)length;
  DeleterData *d = static_cast<DeleterData *>(deleter_data);
  d->release(d->ctx);
  delete d;
}

napi_value to_napi(v8::Local<v8::Value> local) {
  napi_value v;
  std::memcpy(static_cast<void *>(&v), static_cast<void *>(&local), sizeof v);
  return v;
}

v8::Local<v8::Value> to_v8(napi_value v) {
  v8::Local<v8::Value> local;
  std::memcpy(static_cast<void *>(&local), static_cast<void *>(&v), sizeof v);
  return local;
}

}  // namespace

extern "C" napi_value ro_unaccounted_window(napi_env env, uint8_t *base, size_t length, ro_window_release release,
                                            void *ctx) {
  (void)env; /* N-API calls this on the JS thread, inside a handle scope */
  v8::Isolate *isolate = v8::Isolate::GetCurrent();
  if (isolate == nullptr) return nullptr;
  DeleterData *d = new (std::nothrow) DeleterData{release, ctx};
  if (d == nullptr) return nullptr;
  std::unique_ptr<v8::BackingStore> store = v8::SharedArrayBuffer::NewBackingStore(base, length, delete_window, d);
  return to_napi(v8::SharedArrayBuffer::New(isolate, std::move(store)));
}

extern "C" int ro_window_bytes(napi_env env, napi_value value, uint8_t **data, size_t *length) {
  (void)env;
  v8::Local<v8::Value> v = to_v8(value);
  if (v->IsSharedArrayBuffer()) {
    v8::Local<v8::SharedArrayBuffer> sab = v.As<v8::SharedArrayBuffer>();
    *data = static_cast<uint8_t *>(sab->Data());
    *length = sab->ByteLength();
    return 0;
  }
  if (v->IsArrayBuffer()) {
    v8::Local<v8::ArrayBuffer> ab = v.As<v8::ArrayBuffer>();
    *data = static_cast<uint8_t *>(ab->Data());
    *length = ab->ByteLength();
    return 0;
  }
  return -1;
}

/* releaseMappings(): starts an incremental collection so unreachable windows are freed. */
extern "C" napi_value ro_release_mappings_fn(napi_env env, napi_callback_info info) {
  (void)env;
  (void)info;
  v8::Isolate *isolate = v8::Isolate::GetCurrent();
  if (isolate != nullptr) isolate->MemoryPressureNotification(v8::MemoryPressureLevel::kModerate);
  return nullptr;
}
