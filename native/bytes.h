/* Unaligned little- and big-endian loads (memcpy compiles to one move on every target). */
#ifndef RO_BYTES_H
#define RO_BYTES_H

#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define RO_BIG_ENDIAN 1
#else
#define RO_BIG_ENDIAN 0
#endif

static inline uint32_t ro_le32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return RO_BIG_ENDIAN ? __builtin_bswap32(v) : v;
}

static inline uint64_t ro_le64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return RO_BIG_ENDIAN ? __builtin_bswap64(v) : v;
}

static inline uint64_t ro_be64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return RO_BIG_ENDIAN ? v : __builtin_bswap64(v);
}

#endif
