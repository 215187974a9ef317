/* XXH64 (the metadata's "xxh64" file checksum), one-shot over a contiguous buffer. */
#ifndef RO_XXH64_H
#define RO_XXH64_H

#include <stddef.h>
#include <stdint.h>

uint64_t ro_xxh64(const uint8_t *p, size_t len, uint64_t seed);

#endif
