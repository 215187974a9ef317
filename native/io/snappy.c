#include "io/snappy.h"

#include <string.h>

int64_t ro_snappy_length(const uint8_t *src, size_t len, size_t *header) {
  uint64_t value = 0;
  for (size_t i = 0; i < 5 && i < len; i++) {
    value |= (uint64_t)(src[i] & 0x7f) << (7 * i);
    if ((src[i] & 0x80) == 0) {
      if (value > UINT32_MAX) return -1;
      *header = i + 1;
      return (int64_t)value;
    }
  }
  return -1;
}

/* Little-endian integer of n (1..4) bytes. */
static uint32_t load_le(const uint8_t *p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}

int ro_snappy_decode(const uint8_t *src, size_t len, uint8_t *dst, size_t dst_len) {
  size_t header;
  int64_t declared = ro_snappy_length(src, len, &header);
  if (declared < 0 || (uint64_t)declared != dst_len) return -1;
  size_t in = header, out = 0;
  while (in < len) {
    uint8_t tag = src[in++];
    size_t length, offset;
    switch (tag & 3) {
      case 0: { /* literal: its length - 1 in the tag, or in the 1-4 bytes after it */
        length = (size_t)(tag >> 2) + 1;
        if (length > 60) {
          size_t n = length - 60;
          if (len - in < n) return -1;
          length = (size_t)load_le(src + in, n) + 1;
          in += n;
        }
        if (len - in < length || dst_len - out < length) return -1;
        memcpy(dst + out, src + in, length);
        in += length;
        out += length;
        continue;
      }
      case 1: /* copy, 11-bit offset */
        if (len - in < 1) return -1;
        length = 4 + ((tag >> 2) & 7);
        offset = ((size_t)(tag >> 5) << 8) | src[in];
        in += 1;
        break;
      case 2: /* copy, 16-bit offset */
        if (len - in < 2) return -1;
        length = (size_t)(tag >> 2) + 1;
        offset = load_le(src + in, 2);
        in += 2;
        break;
      default: /* copy, 32-bit offset */
        if (len - in < 4) return -1;
        length = (size_t)(tag >> 2) + 1;
        offset = load_le(src + in, 4);
        in += 4;
        break;
    }
    if (offset == 0 || offset > out || dst_len - out < length) return -1;
    uint8_t *to = dst + out;
    const uint8_t *from = to - offset;
    /* A copy may overlap what it writes (offset < length): a repeating pattern, byte by byte. */
    if (offset >= length) memcpy(to, from, length);
    else
      for (size_t i = 0; i < length; i++) to[i] = from[i];
    out += length;
  }
  return out == dst_len ? 0 : -1;
}
