/*
 * Table-driven CRC-32, slicing by 8: eight table look-ups per 8 bytes instead of one per
 * byte. Records are short (a key and a value of ~100 B to a few KiB), where this is
 * within a small factor of carry-less-multiply code and needs no CPU detection.
 */
#include "crc32.h"

#include "bytes.h"

#include <string.h>

#include "crc32-table.h"

uint32_t ro_crc32(uint32_t crc, const uint8_t *p, size_t len) {
  const uint32_t(*t)[256] = ro_crc32_table;
  uint32_t c = ~crc;
  while (len >= 8) {
    uint32_t lo = ro_le32(p) ^ c;
    uint32_t hi = ro_le32(p + 4);
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^ t[3][hi & 0xff] ^
        t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    len -= 8;
  }
  while (len--) c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return ~c;
}
