/* Snappy's raw format (no framing), decoding only: the values of stores built with
 * --compression snappy. https://github.com/google/snappy/blob/main/format_description.txt */
#ifndef RO_SNAPPY_H
#define RO_SNAPPY_H

#include <stddef.h>
#include <stdint.h>

/* The uncompressed length the preamble declares (a varint of at most 32 bits) and the
 * preamble's size in *header; -1 when it is not a valid preamble. */
int64_t ro_snappy_length(const uint8_t *src, size_t len, size_t *header);

/* src into dst, which holds exactly the declared length: 0, or -1 when src is not a
 * valid snappy block of that length (a copy reaching before the start or past the end, a
 * literal past the input, input left over, output short). Never reads or writes outside
 * src and dst, whatever src holds. */
int ro_snappy_decode(const uint8_t *src, size_t len, uint8_t *dst, size_t dst_len);

#endif
