/* MD5 (RFC 1321) of one contiguous buffer: the key hash of every lookup. */
#ifndef RO_MD5_H
#define RO_MD5_H

#include <stddef.h>
#include <stdint.h>

void ro_md5(const uint8_t *data, size_t len, uint8_t out[16]);

#endif
