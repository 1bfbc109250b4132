/*
 * exhaustive_e2m1_div.c - formats/e2m1_div.h against the reference's
 * division: e2m1_encode_div(x, bounds(sv)) == e2m1_encode(x / sv) for all
 * 65536 bf16 x and every NVFP4 block scale sv the quantizer can choose (the
 * e4m3 codes 0x01 .. 0x7E, i.e. [2^-9, 448]).  Exit 0 when all 8.3 M agree.
 */
#include <stdio.h>

#include "formats/e2m1_div.h"

int main(void) {
  long bad = 0, n = 0;
  for (int code = 0x01; code <= 0x7E; code++) {
    const float sv = e4m3_decode((uint8_t)code);
    const e2m1_bounds b = e2m1_bounds_of(sv);
    for (uint32_t u = 0; u < 65536; u++, n++) {
      const float x = bf16_to_f32((uint16_t)u);
      const uint8_t want = e2m1_encode(x / sv), got = e2m1_encode_div(x, &b);
      if (got != want && bad++ < 10)
        printf("bf16 0x%04x / e4m3 0x%02x: got 0x%x, want 0x%x\n", (unsigned)u, code, got, want);
    }
  }
  printf("e2m1_encode_div: %ld of %ld pairs differ from e2m1_encode(x / sv)\n", bad, n);
  return bad != 0;
}
