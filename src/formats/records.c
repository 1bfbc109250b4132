/* Record descriptors and the validation of a cache against its description. */
#include "formats/records.h"

#include "internal.h"

int32_t dsv4kv_record_bytes(dsv4kv_record record) {
  switch (record) {
    case DSV4KV_RECORD_V4: return V4_RECORD;
    case DSV4KV_RECORD_MXFP8: return MXFP8_RECORD;
    case DSV4KV_RECORD_NVFP4: return NVFP4_RECORD;
    case DSV4KV_RECORD_INDEXER_FP8: return IDX_FP8_RECORD;
    case DSV4KV_RECORD_INDEXER_MXFP4: return IDX_FP4_RECORD;
  }
  return 0;
}

dsv4kv_status dsv4kv_record_from_width(int64_t bytes_per_token, dsv4kv_record *record) {
  if (!record) return dsv4kv_fail(DSV4KV_ERR_NULL, "record is NULL");
  switch (bytes_per_token) {
    case V4_RECORD: *record = DSV4KV_RECORD_V4; return DSV4KV_OK;
    case MXFP8_RECORD: *record = DSV4KV_RECORD_MXFP8; return DSV4KV_OK;
    case NVFP4_RECORD: *record = DSV4KV_RECORD_NVFP4; return DSV4KV_OK;
    default: break;
  }
  return dsv4kv_fail(DSV4KV_ERR_FORMAT,
                     "bytes_per_token = %lld names no K-cache record (584 V4, 528 MXFP8, 288 NVFP4)",
                     (long long)bytes_per_token);
}

static const char *record_name(dsv4kv_record r) {
  switch (r) {
    case DSV4KV_RECORD_V4: return "V4";
    case DSV4KV_RECORD_MXFP8: return "MXFP8";
    case DSV4KV_RECORD_NVFP4: return "NVFP4";
    case DSV4KV_RECORD_INDEXER_FP8: return "INDEXER_FP8";
    case DSV4KV_RECORD_INDEXER_MXFP4: return "INDEXER_MXFP4";
  }
  return "?";
}

dsv4kv_status cache_view_make(cache_view *c, tview *tv, const DLTensor *k_cache,
                              const dsv4kv_cache_desc *desc, unsigned allowed_mask) {
  if (!desc) return dsv4kv_fail(DSV4KV_ERR_NULL, "cache (the cache description) is NULL");
  if (!k_cache) return dsv4kv_fail(DSV4KV_ERR_NULL, "k_cache is NULL");
  int32_t rec = dsv4kv_record_bytes(desc->record);
  if (rec == 0)
    return dsv4kv_fail(DSV4KV_ERR_FORMAT, "cache.record = %d is not a known record", (int)desc->record);
  if (!(allowed_mask & (1u << desc->record)))
    return dsv4kv_fail(DSV4KV_ERR_FORMAT, "cache.record = %s is not accepted by this operation",
                       record_name(desc->record));
  if (desc->fp8 != DSV4KV_FP8_OCP && desc->fp8 != DSV4KV_FP8_FNUZ)
    return dsv4kv_fail(DSV4KV_ERR_FORMAT, "cache.fp8 = %d is neither DSV4KV_FP8_OCP nor DSV4KV_FP8_FNUZ",
                       (int)desc->fp8);
  if (desc->fp8 == DSV4KV_FP8_FNUZ &&
      (desc->record == DSV4KV_RECORD_NVFP4 || desc->record == DSV4KV_RECORD_INDEXER_MXFP4))
    return dsv4kv_fail(DSV4KV_ERR_FORMAT, "cache.fp8 = FNUZ is not defined for %s records",
                       record_name(desc->record));
  if (desc->block_size <= 0)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "cache.block_size = %d; must be > 0", desc->block_size);
  uint32_t known = DSV4KV_CACHE_MX_SCALE | DSV4KV_CACHE_TILED;
  if (desc->flags & ~known)
    return dsv4kv_fail(DSV4KV_ERR_FORMAT, "cache.flags = 0x%x has unknown bits", desc->flags);
  if (desc->flags && desc->record != DSV4KV_RECORD_INDEXER_FP8)
    return dsv4kv_fail(DSV4KV_ERR_FORMAT,
                       "cache.flags = 0x%x: MX_SCALE and TILED apply to INDEXER_FP8 records only, not %s",
                       desc->flags, record_name(desc->record));
  if ((desc->flags & DSV4KV_CACHE_TILED) && desc->block_size % IDX_TILE != 0)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "cache.block_size = %d; the TILED layout needs a multiple of 16",
                       desc->block_size);

  dsv4kv_status st;
  if (k_cache->ndim == 3) {
    if ((st = tview_make(tv, k_cache, "k_cache", DT_U8, 3))) return st;
    if ((st = tview_dim_eq(tv, "k_cache", 1, desc->block_size))) return st;
    if ((st = tview_dim_eq(tv, "k_cache", 2, rec))) return st;
    if (tv->shape[2] > 1 && tv->stride[2] != 1)
      return dsv4kv_fail(DSV4KV_ERR_STRIDE, "k_cache.strides[2] = %lld; records must be contiguous",
                         (long long)tv->stride[2]);
    if (tv->shape[1] > 1 && tv->stride[1] != rec)
      return dsv4kv_fail(DSV4KV_ERR_STRIDE, "k_cache.strides[1] = %lld; expected the record width %d",
                         (long long)tv->stride[1], rec);
  } else if (k_cache->ndim == 2) {
    if ((st = tview_make(tv, k_cache, "k_cache", DT_U8, 2))) return st;
    if ((st = tview_last_contiguous(tv, "k_cache"))) return st;
    if (tv->shape[1] < (int64_t)desc->block_size * rec)
      return dsv4kv_fail(DSV4KV_ERR_FORMAT,
                         "k_cache.shape[1] = %lld bytes per page is less than block_size %d x %d-byte %s records",
                         (long long)tv->shape[1], desc->block_size, rec, record_name(desc->record));
  } else {
    return dsv4kv_fail(DSV4KV_ERR_RANK,
                       "k_cache has %d dimensions; expected 2 [pages, page_bytes] or 3 [pages, block_size, record_bytes]",
                       k_cache->ndim);
  }
  int64_t stride = tv->shape[0] > 1 ? tv->stride[0] : (int64_t)desc->block_size * rec;
  if (tv->shape[0] > 1 && stride < (int64_t)desc->block_size * rec)
    return dsv4kv_fail(DSV4KV_ERR_FORMAT,
                       "k_cache page stride %lld bytes is less than block_size %d x %d-byte records",
                       (long long)stride, desc->block_size, rec);
  if (desc->page_stride != 0 && tv->shape[0] > 1 && desc->page_stride != stride)
    return dsv4kv_fail(DSV4KV_ERR_FORMAT, "cache.page_stride = %lld but k_cache's page stride is %lld bytes",
                       (long long)desc->page_stride, (long long)stride);
  if (desc->page_stride < 0)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "cache.page_stride = %lld is negative", (long long)desc->page_stride);
  c->base = tv->data;
  c->num_pages = tv->shape[0];
  c->page_stride = stride;
  c->block_size = desc->block_size;
  c->record_bytes = rec;
  c->record = desc->record;
  c->fp8 = desc->fp8;
  c->flags = desc->flags;
  return DSV4KV_OK;
}
