/* Public record helpers, from the record table (formats/records.h). */
#include "formats/records.h"

#include "internal.h"

int32_t dsv4kv_record_bytes(dsv4kv_record record) {
  record_layout l;
  return record_layout_of(record, &l) ? l.record_bytes : 0;
}

dsv4kv_status dsv4kv_record_from_width(int64_t bytes_per_token, dsv4kv_record *record) {
  if (!record) return dsv4kv_fail(DSV4KV_ERR_NULL, "record is NULL");
  switch (bytes_per_token) {
    case V4_RECORD_BYTES: *record = DSV4KV_RECORD_V4; break;
    case MXFP8_RECORD_BYTES: *record = DSV4KV_RECORD_MXFP8; break;
    case NVFP4_RECORD_BYTES: *record = DSV4KV_RECORD_NVFP4; break;
    default:
      return dsv4kv_fail(DSV4KV_ERR_FORMAT,
                         "bytes_per_token = %lld names no K-cache record (584 V4, 528 MXFP8, 288 NVFP4)",
                         (long long)bytes_per_token);
  }
  dsv4kv_clear_error();
  return DSV4KV_OK;
}

const char *dsv4kv_record_name(dsv4kv_record r) {
  switch (r) {
#define DSV4KV_RECORD_NAME(N, rec, val, sc, eps, ns, kind, org) \
  case DSV4KV_RECORD_##N: return #N;
    DSV4KV_RECORD_TABLE(DSV4KV_RECORD_NAME)
#undef DSV4KV_RECORD_NAME
  }
  return "unknown";
}
