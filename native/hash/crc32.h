/* CRC-32 as zlib computes it (reflected polynomial 0xedb88320): the per-record check. */
#ifndef RO_CRC32_H
#define RO_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Continues `crc` (0 to start) over `len` bytes, like zlib's crc32(crc, p, len). */
uint32_t ro_crc32(uint32_t crc, const uint8_t *p, size_t len);

/* Lets the CPU feature check work (called once at module load; idempotent). */
void ro_crc32_init(void);

#endif
