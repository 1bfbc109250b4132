/* The validation of a cache tensor against its description (SPEC §2, §6). */
#include "internal.h"

dsv4kv_status cache_desc_check(const dsv4kv_cache_desc *desc, const char *name, unsigned allowed_mask,
                               record_layout *layout) {
  if (!desc) return dsv4kv_fail(DSV4KV_ERR_NULL, "%s (the cache description) is NULL", name);
  if (!record_layout_of(desc->record, layout))
    return dsv4kv_fail(DSV4KV_ERR_FORMAT, "%s.record = %d is not a known record", name, (int)desc->record);
  if (!(allowed_mask & (1u << desc->record)))
    return dsv4kv_fail(DSV4KV_ERR_FORMAT, "%s.record = %s is not accepted by this operation", name,
                       dsv4kv_record_name(desc->record));
  if (desc->fp8 != DSV4KV_FP8_OCP && desc->fp8 != DSV4KV_FP8_FNUZ)
    return dsv4kv_fail(DSV4KV_ERR_FORMAT, "%s.fp8 = %d is neither DSV4KV_FP8_OCP nor DSV4KV_FP8_FNUZ", name,
                       (int)desc->fp8);
  if (desc->fp8 == DSV4KV_FP8_FNUZ &&
      (desc->record == DSV4KV_RECORD_NVFP4 || desc->record == DSV4KV_RECORD_INDEXER_MXFP4))
    return dsv4kv_fail(DSV4KV_ERR_FORMAT, "%s.fp8 = FNUZ is not defined for %s records", name,
                       dsv4kv_record_name(desc->record));
  if (desc->block_size <= 0)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "%s.block_size = %d; must be > 0", name, desc->block_size);
  uint32_t known = DSV4KV_CACHE_MX_SCALE | DSV4KV_CACHE_TILED;
  if (desc->flags & ~known)
    return dsv4kv_fail(DSV4KV_ERR_FORMAT, "%s.flags = 0x%x has unknown bits", name, desc->flags);
  if (desc->flags && desc->record != DSV4KV_RECORD_INDEXER_FP8)
    return dsv4kv_fail(DSV4KV_ERR_FORMAT,
                       "%s.flags = 0x%x: MX_SCALE and TILED apply to INDEXER_FP8 records only, not %s", name,
                       desc->flags, dsv4kv_record_name(desc->record));
  if ((desc->flags & DSV4KV_CACHE_TILED) && desc->block_size % IDX_TILE != 0)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "%s.block_size = %d; the TILED layout needs a multiple of 16", name,
                       desc->block_size);
  if (desc->page_stride < 0)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "%s.page_stride = %lld is negative", name, (long long)desc->page_stride);
  return DSV4KV_OK;
}

dsv4kv_status cache_view_make(cache_view *c, tview *tv, const DLTensor *k_cache,
                              const dsv4kv_cache_desc *desc, unsigned allowed_mask) {
  record_layout layout;
  dsv4kv_status st;
  if (!desc) return dsv4kv_fail(DSV4KV_ERR_NULL, "cache (the cache description) is NULL");
  if (!k_cache) return dsv4kv_fail(DSV4KV_ERR_NULL, "k_cache is NULL");
  if ((st = cache_desc_check(desc, "cache", allowed_mask, &layout))) return st;
  const int32_t rec = layout.record_bytes;

  if (k_cache->ndim == 3) {
    if ((st = tview_make(tv, k_cache, "k_cache", DT_U8, 3))) return st;
    if (tv->shape[1] != desc->block_size) /* which of the two is wrong is the caller's to say */
      return dsv4kv_fail(DSV4KV_ERR_SHAPE, "k_cache.shape[1] = %lld tokens a page does not match block_size %d",
                         (long long)tv->shape[1], desc->block_size);
    if (tv->shape[2] != rec)
      return dsv4kv_fail(DSV4KV_ERR_SHAPE, "k_cache.shape[2] = %lld bytes a record; a %s record is %d",
                         (long long)tv->shape[2], dsv4kv_record_name(desc->record), rec);
    const int empty = tv->shape[0] == 0; /* no page: any strides */
    if (!empty && tv->shape[2] > 1 && tv->stride[2] != 1)
      return dsv4kv_fail(DSV4KV_ERR_STRIDE, "k_cache.strides[2] = %lld; records must be contiguous",
                         (long long)tv->stride[2]);
    if (!empty && tv->shape[1] > 1 && tv->stride[1] != rec)
      return dsv4kv_fail(DSV4KV_ERR_STRIDE, "k_cache.strides[1] = %lld; expected the record width %d",
                         (long long)tv->stride[1], rec);
  } else if (k_cache->ndim == 2) {
    if ((st = tview_make(tv, k_cache, "k_cache", DT_U8, 2))) return st;
    if ((st = tview_last_contiguous(tv, "k_cache"))) return st;
    if (tv->shape[1] < (int64_t)desc->block_size * rec)
      return dsv4kv_fail(DSV4KV_ERR_FORMAT,
                         "k_cache.shape[1] = %lld bytes per page is less than block_size %d x %d-byte %s records",
                         (long long)tv->shape[1], desc->block_size, rec, dsv4kv_record_name(desc->record));
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
  c->base = tv->data;
  c->num_pages = tv->shape[0];
  c->page_stride = stride;
  c->block_size = desc->block_size;
  c->record_bytes = rec;
  c->record = desc->record;
  c->fp8 = desc->fp8;
  c->flags = desc->flags;
  c->layout = layout;
  return DSV4KV_OK;
}
