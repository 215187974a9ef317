/*
 * CRC-32 as zlib computes it. Two ways, picked per call:
 * - carry-less multiplication (x86-64 with PCLMULQDQ and SSE4.1): folds 64 bytes per
 *   step; the method of Intel's "Fast CRC Computation for Generic Polynomials Using
 *   PCLMULQDQ" (2009), with the constants for the reflected polynomial as used by
 *   Linux and Chromium's zlib. Used from 64 bytes on; the last len % 16 bytes go
 *   through the tables;
 * - tables, slicing by 8: eight look-ups per 8 bytes, everywhere else.
 * test/unit/formats/store/store-ops.test.ts checks both against node:zlib.
 */
#include "hash/crc32.h"

#include "bytes.h"
#include "hash/crc32-table.h"

static uint32_t crc32_tables(uint32_t c, const uint8_t *p, size_t len) {
  const uint32_t(*t)[256] = ro_crc32_table;
  while (len >= 8) {
    uint32_t lo = ro_le32(p) ^ c;
    uint32_t hi = ro_le32(p + 4);
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^ t[3][hi & 0xff] ^
        t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    len -= 8;
  }
  while (len--) c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RO_HAVE_CLMUL 1
#include <immintrin.h>

/* `len` >= 64 and a multiple of 16; `c` is the running (inverted) CRC. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t crc32_clmul(uint32_t c, const uint8_t *p, size_t len) {
  const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596LL, 0x0154442bd4LL);
  const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009eLL, 0x01751997d0LL);
  const __m128i k5k0 = _mm_set_epi64x(0, 0x0163cd6124LL);
  const __m128i poly = _mm_set_epi64x(0x01f7011641LL, 0x01db710641LL);
  __m128i x0, x1, x2, x3, x4, x5, x6, x7, x8;

  x1 = _mm_loadu_si128((const __m128i *)(p + 0x00));
  x2 = _mm_loadu_si128((const __m128i *)(p + 0x10));
  x3 = _mm_loadu_si128((const __m128i *)(p + 0x20));
  x4 = _mm_loadu_si128((const __m128i *)(p + 0x30));
  x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)c));
  p += 64;
  len -= 64;

  /* Four lanes folded 64 bytes at a time. */
  while (len >= 64) {
    x5 = _mm_clmulepi64_si128(x1, k1k2, 0x00);
    x6 = _mm_clmulepi64_si128(x2, k1k2, 0x00);
    x7 = _mm_clmulepi64_si128(x3, k1k2, 0x00);
    x8 = _mm_clmulepi64_si128(x4, k1k2, 0x00);
    x1 = _mm_clmulepi64_si128(x1, k1k2, 0x11);
    x2 = _mm_clmulepi64_si128(x2, k1k2, 0x11);
    x3 = _mm_clmulepi64_si128(x3, k1k2, 0x11);
    x4 = _mm_clmulepi64_si128(x4, k1k2, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x5), _mm_loadu_si128((const __m128i *)(p + 0x00)));
    x2 = _mm_xor_si128(_mm_xor_si128(x2, x6), _mm_loadu_si128((const __m128i *)(p + 0x10)));
    x3 = _mm_xor_si128(_mm_xor_si128(x3, x7), _mm_loadu_si128((const __m128i *)(p + 0x20)));
    x4 = _mm_xor_si128(_mm_xor_si128(x4, x8), _mm_loadu_si128((const __m128i *)(p + 0x30)));
    p += 64;
    len -= 64;
  }

  /* The four lanes into one. */
  x5 = _mm_clmulepi64_si128(x1, k3k4, 0x00);
  x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x11), x2), x5);
  x5 = _mm_clmulepi64_si128(x1, k3k4, 0x00);
  x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x11), x3), x5);
  x5 = _mm_clmulepi64_si128(x1, k3k4, 0x00);
  x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x11), x4), x5);

  /* Then 16 bytes at a time. */
  while (len >= 16) {
    x2 = _mm_loadu_si128((const __m128i *)p);
    x5 = _mm_clmulepi64_si128(x1, k3k4, 0x00);
    x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x11), x2), x5);
    p += 16;
    len -= 16;
  }

  /* 128 bits to 64. */
  x2 = _mm_clmulepi64_si128(x1, k3k4, 0x10);
  x3 = _mm_setr_epi32(~0, 0, ~0, 0);
  x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), x2);
  x0 = k5k0;
  x2 = _mm_srli_si128(x1, 4);
  x1 = _mm_and_si128(x1, x3);
  x1 = _mm_xor_si128(_mm_clmulepi64_si128(x1, x0, 0x00), x2);

  /* Barrett reduction to 32 bits. */
  x2 = _mm_and_si128(x1, x3);
  x2 = _mm_clmulepi64_si128(x2, poly, 0x10);
  x2 = _mm_and_si128(x2, x3);
  x2 = _mm_clmulepi64_si128(x2, poly, 0x00);
  x1 = _mm_xor_si128(x1, x2);
  return (uint32_t)_mm_extract_epi32(x1, 1);
}

static int have_clmul(void) {
  /* libgcc/compiler-rt fill in the CPU model once per process; reading it is a load. */
  return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
}
#endif

uint32_t ro_crc32(uint32_t crc, const uint8_t *p, size_t len) {
  uint32_t c = ~crc;
#ifdef RO_HAVE_CLMUL
  if (len >= 64 && have_clmul()) {
    size_t folded = len & ~(size_t)15;
    c = crc32_clmul(c, p, folded);
    p += folded;
    len -= folded;
  }
#endif
  return ~crc32_tables(c, p, len);
}

void ro_crc32_init(void) {
#ifdef RO_HAVE_CLMUL
  __builtin_cpu_init();
#endif
}
