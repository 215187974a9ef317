/*
 * ZSTD through the system's libzstd, loaded with dlopen, so building the addon needs
 * neither its headers nor a link-time dependency (on Debian, dpkg itself depends on
 * libzstd1); without it each call says so and the caller uses its other decoder.
 *
 * - zstdDecompress: Parquet pages into a buffer the caller sized from the page header.
 * - zstdTrain: a dictionary from samples (ZDICT_trainFromBuffer, single-threaded, so the
 *   same samples give the same bytes).
 * - zstdPrepare / zstdCompress / zstdEncodeBatch / zstdDecompressWith: store values, one frame each, with a
 *   prepared dictionary (or none). A prepared handle owns its dictionary and its contexts,
 *   so no state is shared between threads; each thread prepares its own.
 *
 * The function pointers are set once (pthread_once) and only read afterwards, so the
 * module stays safe to load in any number of threads.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "napi-util.h"

typedef size_t (*zstd_decompress_fn)(void *dst, size_t capacity, const void *src, size_t size);
typedef unsigned (*zstd_is_error_fn)(size_t code);
typedef const char *(*zstd_error_name_fn)(size_t code);
typedef size_t (*zdict_train_fn)(void *dict, size_t capacity, const void *samples, const size_t *sizes, unsigned count);
/* ZSTD_compressionParameters and ZSTD_customMem, as zstd.h lays them out (stable since v1.0). */
typedef struct {
  unsigned window_log, chain_log, hash_log, search_log, min_match, target_length;
  int strategy;
} cparams_t;
typedef struct {
  void *alloc, *free, *opaque;
} custom_mem_t;
typedef cparams_t (*get_cparams_fn)(int level, unsigned long long src_size_hint, size_t dict_size);
typedef void *(*create_cdict_fn)(const void *dict, size_t size, int load_method, int content_type, cparams_t params, custom_mem_t mem);
typedef size_t (*dctx_set_fn)(void *dctx, int param, int value);
typedef void *(*create_ddict_fn)(const void *dict, size_t size);
typedef size_t (*free_fn)(void *p);
typedef void *(*create_ctx_fn)(void);
/* ZSTD_frameParameters, as zstd.h lays it out (stable since v1.0). */
typedef struct {
  int content_size_flag, checksum_flag, no_dict_id_flag;
} frame_params_t;
typedef size_t (*compress_cdict_fn)(void *cctx, void *dst, size_t cap, const void *src, size_t size, const void *cdict, frame_params_t f);
typedef size_t (*compress_cctx_fn)(void *cctx, void *dst, size_t cap, const void *src, size_t size, int level);
typedef size_t (*decompress_ddict_fn)(void *dctx, void *dst, size_t cap, const void *src, size_t size, const void *ddict);
typedef size_t (*decompress_dctx_fn)(void *dctx, void *dst, size_t cap, const void *src, size_t size);
typedef unsigned long long (*frame_size_fn)(const void *src, size_t size);

static pthread_once_t zstd_once = PTHREAD_ONCE_INIT;
static zstd_decompress_fn zstd_decompress;
static zstd_is_error_fn zstd_is_error;
static zstd_error_name_fn zstd_error_name;
/* The dictionary functions: all set, or all NULL. */
static struct {
  zdict_train_fn train;
  zstd_is_error_fn dict_is_error;
  zstd_error_name_fn dict_error_name;
  get_cparams_fn get_cparams;
  create_cdict_fn create_cdict;
  dctx_set_fn dctx_set;
  create_ddict_fn create_ddict;
  free_fn free_cdict, free_ddict, free_cctx, free_dctx;
  create_ctx_fn create_cctx, create_dctx;
  compress_cdict_fn compress_cdict;
  compress_cctx_fn compress_cctx;
  decompress_ddict_fn decompress_ddict;
  decompress_dctx_fn decompress_dctx;
  frame_size_fn frame_size;
} z;

#define SYM(field, type, name)                          \
  do {                                                   \
    t.field = (type)dlsym(lib, name);                    \
    if (t.field == NULL) return;                         \
  } while (0)

static void zstd_load(void) {
  void *lib = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) return;
  zstd_decompress_fn d = (zstd_decompress_fn)dlsym(lib, "ZSTD_decompress");
  zstd_is_error_fn e = (zstd_is_error_fn)dlsym(lib, "ZSTD_isError");
  zstd_error_name_fn n = (zstd_error_name_fn)dlsym(lib, "ZSTD_getErrorName");
  if (d == NULL || e == NULL || n == NULL) return;
  zstd_is_error = e;
  zstd_error_name = n;
  zstd_decompress = d;
  __typeof__(z) t;
  SYM(train, zdict_train_fn, "ZDICT_trainFromBuffer");
  SYM(dict_is_error, zstd_is_error_fn, "ZDICT_isError");
  SYM(dict_error_name, zstd_error_name_fn, "ZDICT_getErrorName");
  SYM(get_cparams, get_cparams_fn, "ZSTD_getCParams");
  /* Exported by libzstd.so.1 since v1.0 although zstd.h lists it with the static-only API. */
  SYM(create_cdict, create_cdict_fn, "ZSTD_createCDict_advanced");
  SYM(dctx_set, dctx_set_fn, "ZSTD_DCtx_setParameter");
  SYM(create_ddict, create_ddict_fn, "ZSTD_createDDict");
  SYM(free_cdict, free_fn, "ZSTD_freeCDict");
  SYM(free_ddict, free_fn, "ZSTD_freeDDict");
  SYM(free_cctx, free_fn, "ZSTD_freeCCtx");
  SYM(free_dctx, free_fn, "ZSTD_freeDCtx");
  SYM(create_cctx, create_ctx_fn, "ZSTD_createCCtx");
  SYM(create_dctx, create_ctx_fn, "ZSTD_createDCtx");
  SYM(compress_cdict, compress_cdict_fn, "ZSTD_compress_usingCDict_advanced");
  SYM(compress_cctx, compress_cctx_fn, "ZSTD_compressCCtx");
  SYM(decompress_ddict, decompress_ddict_fn, "ZSTD_decompress_usingDDict");
  SYM(decompress_dctx, decompress_dctx_fn, "ZSTD_decompressDCtx");
  SYM(frame_size, frame_size_fn, "ZSTD_getFrameContentSize");
  z = t;
}

static napi_value zstd_fail(napi_env env, const char *reason) {
  napi_throw_error(env, "RO_ZSTD", reason);
  return NULL;
}

/* zstdDecompress(src: Uint8Array, dst: Uint8Array): number -- the bytes written into dst
 * (every frame of src, one after the other), or -1 when libzstd is not available. Throws an
 * Error with zstd's reason when the data does not decompress into dst. */
static napi_value zstd_decompress_fn_napi(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  uint8_t *src, *dst;
  size_t src_len, dst_len;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2) return ro_throw_type(env, "zstdDecompress(src, dst)");
  if (ro_get_bytes(env, argv[0], &src, &src_len) != 0) return ro_throw_type(env, "zstdDecompress: src must be a Uint8Array");
  if (ro_get_bytes(env, argv[1], &dst, &dst_len) != 0) return ro_throw_type(env, "zstdDecompress: dst must be a Uint8Array");
  pthread_once(&zstd_once, zstd_load);
  if (zstd_decompress == NULL) return ro_number(env, -1);
  size_t n = zstd_decompress(dst, dst_len, src, src_len);
  if (zstd_is_error(n)) return zstd_fail(env, zstd_error_name(n));
  return ro_number(env, (double)n);
}

/* zstdTrain(samples: Uint8Array, sizes: Uint32Array, count: number, dst: Uint8Array): number
 * -- the dictionary's size in dst (at most dst's length), or -1 without libzstd. Throws
 * with ZDICT's reason (too few or too small samples). */
static napi_value zstd_train_napi(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  uint8_t *samples, *dst;
  uint32_t *sizes;
  size_t samples_len, sizes_len, dst_len;
  uint32_t count;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 4) return ro_throw_type(env, "zstdTrain(samples, sizes, count, dst)");
  if (ro_get_bytes(env, argv[0], &samples, &samples_len) != 0 || ro_get_u32_array(env, argv[1], &sizes, &sizes_len) != 0 ||
      napi_get_value_uint32(env, argv[2], &count) != napi_ok || ro_get_bytes(env, argv[3], &dst, &dst_len) != 0 || count > sizes_len)
    return ro_throw_type(env, "zstdTrain: bad arguments");
  size_t total = 0;
  for (uint32_t i = 0; i < count; i++) total += sizes[i];
  if (total > samples_len) return ro_throw_type(env, "zstdTrain: sizes exceed the samples");
  pthread_once(&zstd_once, zstd_load);
  if (z.train == NULL) return ro_number(env, -1);
  size_t *widths = malloc((count > 0 ? count : 1) * sizeof(size_t));
  if (widths == NULL) return zstd_fail(env, "out of memory");
  for (uint32_t i = 0; i < count; i++) widths[i] = sizes[i];
  size_t n = z.train(dst, dst_len, samples, widths, count);
  free(widths);
  if (z.dict_is_error(n)) return zstd_fail(env, z.dict_error_name(n));
  return ro_number(env, (double)n);
}

/*
 * Store frames are written without their 4-byte magic number (RFC 8878's Magic_Number):
 * every stored value is a frame, so the magic would only repeat 4 bytes per value, 2% of a
 * store of short compressed values. Frames written before keep theirs and read the same: a
 * frame header descriptor never equals the magic's first byte (0x28 sets its reserved
 * bit), so a stored value that starts with the magic is such a frame, and one that does not
 * is magicless.
 */
static const uint8_t frame_magic[4] = {0x28, 0xB5, 0x2F, 0xFD};
/* ZSTD_d_format and ZSTD_f_zstd1_magicless: libzstd's experimental names, same values since v1.3.6. */
#define ZSTD_D_FORMAT 1000
#define ZSTD_F_MAGICLESS 1
/* ZSTD_CONTENTSIZE_UNKNOWN: the CDict serves values of every size. */
#define ZSTD_SIZE_UNKNOWN (0ULL - 1)
/*
 * Matches against a dictionary start at 6 bytes: in short values a match of 4 or 5 bytes
 * (a digit run, a quote and a comma) costs about what its literals cost and breaks the
 * runs the entropy coder compresses. Measured on the bench's realistic JSON values with a
 * trained 64 KiB dictionary: frames 1% smaller at level 3, 7-12% at levels 4-12, the same
 * at 16-19 (whose optimal parser prices matches itself), and compression no slower.
 */
#define DICT_MIN_MATCH 6

static int has_magic(const uint8_t *src, size_t len) { return len >= 4 && memcmp(src, frame_magic, 4) == 0; }

/* A prepared dictionary (or none) and the contexts that use it: one decompression context
 * per frame kind (without the magic; with it, made at the first such frame). */
typedef struct {
  void *cdict, *ddict, *cctx, *dctx, *dctx_magicless;
  int level;
} prepared_t;

/* The CDict of a level: libzstd's parameters for the level and the dictionary's size, with
 * matches of at least DICT_MIN_MATCH bytes. */
static void *create_cdict(const uint8_t *dict, size_t dict_len, int level) {
  cparams_t params = z.get_cparams(level, ZSTD_SIZE_UNKNOWN, dict_len);
  if (params.min_match < DICT_MIN_MATCH) params.min_match = DICT_MIN_MATCH;
  static const custom_mem_t default_mem = {NULL, NULL, NULL};
  return z.create_cdict(dict, dict_len, 0 /* ZSTD_dlm_byCopy */, 0 /* ZSTD_dct_auto */, params, default_mem);
}

static void prepared_free(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  prepared_t *p = data;
  if (p->cdict != NULL) z.free_cdict(p->cdict);
  if (p->ddict != NULL) z.free_ddict(p->ddict);
  if (p->cctx != NULL) z.free_cctx(p->cctx);
  if (p->dctx != NULL) z.free_dctx(p->dctx);
  if (p->dctx_magicless != NULL) z.free_dctx(p->dctx_magicless);
  free(p);
}

/* zstdPrepare(dict: Uint8Array | null, level: number, compress: boolean): object | null --
 * a handle for zstdCompress (when `compress`) and zstdDecompressWith; null without
 * libzstd. Throws when libzstd refuses the dictionary. */
static napi_value zstd_prepare_napi(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], result;
  uint8_t *dict = NULL;
  size_t dict_len = 0;
  int32_t level;
  bool compress;
  napi_valuetype type;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3) return ro_throw_type(env, "zstdPrepare(dict, level, compress)");
  if (napi_typeof(env, argv[0], &type) != napi_ok) return NULL;
  if (type != napi_null && ro_get_bytes(env, argv[0], &dict, &dict_len) != 0) return ro_throw_type(env, "zstdPrepare: dict must be a Uint8Array or null");
  if (napi_get_value_int32(env, argv[1], &level) != napi_ok || napi_get_value_bool(env, argv[2], &compress) != napi_ok)
    return ro_throw_type(env, "zstdPrepare: bad level or compress flag");
  pthread_once(&zstd_once, zstd_load);
  if (z.create_dctx == NULL) {
    napi_get_null(env, &result);
    return result;
  }
  prepared_t *p = calloc(1, sizeof *p);
  if (p == NULL) return zstd_fail(env, "out of memory");
  p->level = level;
  // The context for frames with their magic (versions built before magicless frames) is made
  // at the first such frame: a version built since never needs it.
  p->dctx_magicless = z.create_dctx();
  if (compress) p->cctx = z.create_cctx();
  if (dict != NULL) {
    p->ddict = z.create_ddict(dict, dict_len);
    if (compress) p->cdict = create_cdict(dict, dict_len, level);
  }
  if (p->dctx_magicless != NULL && zstd_is_error(z.dctx_set(p->dctx_magicless, ZSTD_D_FORMAT, ZSTD_F_MAGICLESS))) {
    prepared_free(env, p, NULL);
    return zstd_fail(env, "libzstd does not read frames without a magic number");
  }
  if (p->dctx_magicless == NULL || (compress && p->cctx == NULL) ||
      (dict != NULL && (p->ddict == NULL || (compress && p->cdict == NULL)))) {
    prepared_free(env, p, NULL);
    return zstd_fail(env, "libzstd refused the dictionary");
  }
  if (napi_create_external(env, p, prepared_free, NULL, &result) != napi_ok) {
    prepared_free(env, p, NULL);
    return NULL;
  }
  return result;
}

/* One value as a frame without its magic number (or a libzstd error code). The frame after
 * its magic is the magicless frame, byte for byte. No dictionary id either: every value of a
 * version has the same dictionary, which the metadata names and checksums. */
static size_t compress_frame(prepared_t *p, uint8_t *dst, size_t dst_len, const uint8_t *src, size_t src_len) {
  static const frame_params_t frame = {.content_size_flag = 1, .checksum_flag = 0, .no_dict_id_flag = 1};
  size_t n = p->cdict != NULL ? z.compress_cdict(p->cctx, dst, dst_len, src, src_len, p->cdict, frame)
                              : z.compress_cctx(p->cctx, dst, dst_len, src, src_len, p->level);
  if (zstd_is_error(n)) return n;
  if (!has_magic(dst, n)) return (size_t)-1; /* ZSTD_error_GENERIC: libzstd never writes this */
  memmove(dst, dst + 4, n - 4);
  return n - 4;
}

static prepared_t *get_prepared(napi_env env, napi_value v) {
  void *p = NULL;
  napi_valuetype type;
  if (napi_typeof(env, v, &type) != napi_ok || type != napi_external) return NULL;
  if (napi_get_value_external(env, v, &p) != napi_ok) return NULL;
  return p;
}

/* zstdCompress(prepared, src, dst): number -- one frame (with its content size, without
 * its magic number) in dst, its length. Throws when dst is too small (size it with the
 * compress bound). */
static napi_value zstd_compress_napi(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  uint8_t *src, *dst;
  size_t src_len, dst_len;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3) return ro_throw_type(env, "zstdCompress(prepared, src, dst)");
  prepared_t *p = get_prepared(env, argv[0]);
  if (p == NULL || p->cctx == NULL) return ro_throw_type(env, "zstdCompress: not a handle prepared for compression");
  if (ro_get_bytes(env, argv[1], &src, &src_len) != 0 || ro_get_bytes(env, argv[2], &dst, &dst_len) != 0)
    return ro_throw_type(env, "zstdCompress: src and dst must be Uint8Arrays");
  size_t n = compress_frame(p, dst, dst_len, src, src_len);
  if (zstd_is_error(n)) return zstd_fail(env, zstd_error_name(n));
  return ro_number(env, (double)n);
}

/* zstdEncodeBatch(prepared, src, keyStart, keyEnd, valueStart, valueEnd, count, dst,
 * outKeyStart, outKeyEnd, outValueStart, outValueEnd): number -- for each of `count`
 * records of src, its key copied and its value compressed (as zstdCompress) into dst, back
 * to back, their ranges in dst in the out arrays; the bytes of dst used. One call per batch
 * of a build's map step instead of one per value. Throws when a range is outside src or dst
 * is too small (size it with the keys and each value's compress bound). */
static napi_value zstd_encode_batch_napi(napi_env env, napi_callback_info info) {
  size_t argc = 12;
  napi_value argv[12];
  uint8_t *src, *dst;
  size_t src_len, dst_len, n_ks, n_ke, n_vs, n_ve, n_oks, n_oke, n_ovs, n_ove;
  uint32_t *ks, *ke, *vs, *ve, *oks, *oke, *ovs, *ove;
  uint32_t count;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 12) return ro_throw_type(env, "zstdEncodeBatch: 12 arguments");
  prepared_t *p = get_prepared(env, argv[0]);
  if (p == NULL || p->cctx == NULL) return ro_throw_type(env, "zstdEncodeBatch: not a handle prepared for compression");
  if (ro_get_bytes(env, argv[1], &src, &src_len) != 0 || ro_get_u32_array(env, argv[2], &ks, &n_ks) != 0 ||
      ro_get_u32_array(env, argv[3], &ke, &n_ke) != 0 || ro_get_u32_array(env, argv[4], &vs, &n_vs) != 0 ||
      ro_get_u32_array(env, argv[5], &ve, &n_ve) != 0 || napi_get_value_uint32(env, argv[6], &count) != napi_ok ||
      ro_get_bytes(env, argv[7], &dst, &dst_len) != 0 || ro_get_u32_array(env, argv[8], &oks, &n_oks) != 0 ||
      ro_get_u32_array(env, argv[9], &oke, &n_oke) != 0 || ro_get_u32_array(env, argv[10], &ovs, &n_ovs) != 0 ||
      ro_get_u32_array(env, argv[11], &ove, &n_ove) != 0)
    return ro_throw_type(env, "zstdEncodeBatch: bad arguments");
  if (count > n_ks || count > n_ke || count > n_vs || count > n_ve || count > n_oks || count > n_oke || count > n_ovs || count > n_ove)
    return ro_throw_type(env, "zstdEncodeBatch: count exceeds an array");
  if (dst_len > UINT32_MAX) return ro_throw_type(env, "zstdEncodeBatch: dst over 4 GiB");
  size_t at = 0;
  for (uint32_t i = 0; i < count; i++) {
    if (ks[i] > ke[i] || ke[i] > src_len || vs[i] > ve[i] || ve[i] > src_len) return ro_throw_type(env, "zstdEncodeBatch: a range is outside src");
    size_t key_len = ke[i] - ks[i];
    if (dst_len - at < key_len) return zstd_fail(env, "zstdEncodeBatch: dst too small");
    memcpy(dst + at, src + ks[i], key_len);
    oks[i] = (uint32_t)at;
    at += key_len;
    oke[i] = (uint32_t)at;
    size_t n = compress_frame(p, dst + at, dst_len - at, src + vs[i], ve[i] - vs[i]);
    if (zstd_is_error(n)) return zstd_fail(env, zstd_error_name(n));
    ovs[i] = (uint32_t)at;
    at += n;
    ove[i] = (uint32_t)at;
  }
  return ro_number(env, (double)at);
}

/* zstdDecompressWith(prepared, src, dst): number -- the frame of src into dst, the bytes
 * written. Throws with zstd's reason (corrupt frame, wrong dictionary, dst too small). */
static napi_value zstd_decompress_with_napi(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  uint8_t *src, *dst;
  size_t src_len, dst_len;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3) return ro_throw_type(env, "zstdDecompressWith(prepared, src, dst)");
  prepared_t *p = get_prepared(env, argv[0]);
  if (p == NULL) return ro_throw_type(env, "zstdDecompressWith: not a prepared handle");
  if (ro_get_bytes(env, argv[1], &src, &src_len) != 0 || ro_get_bytes(env, argv[2], &dst, &dst_len) != 0)
    return ro_throw_type(env, "zstdDecompressWith: src and dst must be Uint8Arrays");
  void *dctx = p->dctx_magicless;
  if (has_magic(src, src_len)) {
    if (p->dctx == NULL) p->dctx = z.create_dctx();
    if (p->dctx == NULL) return zstd_fail(env, "out of memory");
    dctx = p->dctx;
  }
  size_t n = p->ddict != NULL ? z.decompress_ddict(dctx, dst, dst_len, src, src_len, p->ddict)
                              : z.decompress_dctx(dctx, dst, dst_len, src, src_len);
  if (zstd_is_error(n)) return zstd_fail(env, zstd_error_name(n));
  return ro_number(env, (double)n);
}

/* zstdFrameSize(src): number -- the content size a frame's header declares (a frame with
 * or without its magic number); -1 when it declares none, -2 when src is not a frame
 * header, -3 without libzstd. */
static napi_value zstd_frame_size_napi(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  uint8_t *src;
  size_t src_len;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || ro_get_bytes(env, argv[0], &src, &src_len) != 0)
    return ro_throw_type(env, "zstdFrameSize(src)");
  pthread_once(&zstd_once, zstd_load);
  if (z.frame_size == NULL) return ro_number(env, -3);
  /* A frame header is at most 18 bytes with its magic: read a magicless one behind one. */
  uint8_t header[18];
  if (!has_magic(src, src_len)) {
    size_t take = src_len < sizeof header - 4 ? src_len : sizeof header - 4;
    memcpy(header, frame_magic, 4);
    memcpy(header + 4, src, take);
    src = header;
    src_len = take + 4;
  }
  unsigned long long n = z.frame_size(src, src_len);
  if (n == 0ULL - 1) return ro_number(env, -1);
  if (n == 0ULL - 2) return ro_number(env, -2);
  return ro_number(env, (double)n);
}

int ro_register_zstd(napi_env env, napi_value exports) {
  if (ro_set_function(env, exports, "zstdDecompress", zstd_decompress_fn_napi) != 0) return -1;
  if (ro_set_function(env, exports, "zstdTrain", zstd_train_napi) != 0) return -1;
  if (ro_set_function(env, exports, "zstdPrepare", zstd_prepare_napi) != 0) return -1;
  if (ro_set_function(env, exports, "zstdCompress", zstd_compress_napi) != 0) return -1;
  if (ro_set_function(env, exports, "zstdEncodeBatch", zstd_encode_batch_napi) != 0) return -1;
  if (ro_set_function(env, exports, "zstdDecompressWith", zstd_decompress_with_napi) != 0) return -1;
  return ro_set_function(env, exports, "zstdFrameSize", zstd_frame_size_napi);
}
