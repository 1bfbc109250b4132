/* Public entry points of the number formats (SPEC §1). */
#include "formats/numfmt.h"

#include "dsv4kv.h"

float dsv4kv_bf16_to_f32(uint16_t bits) { return bf16_to_f32(bits); }
uint16_t dsv4kv_f32_to_bf16(float x) { return f32_to_bf16(x); }
uint8_t dsv4kv_e4m3_encode(float x) { return e4m3_encode(x); }
float dsv4kv_e4m3_decode(uint8_t code) { return e4m3_decode(code); }
uint8_t dsv4kv_e4m3fnuz_encode(float x) { return e4m3fnuz_encode(x); }
float dsv4kv_e4m3fnuz_decode(uint8_t code) { return e4m3fnuz_decode(code); }
uint8_t dsv4kv_e2m1_encode(float x) { return e2m1_encode(x); }
float dsv4kv_e2m1_decode(uint8_t code) { return e2m1_decode(code); }
float dsv4kv_ue8m0_decode(uint8_t e) { return ue8m0_decode(e); }
