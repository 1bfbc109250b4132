/* dsv4kv_warmup: the model description checked, then the device's backend
 * loads the kernels its layers launch (src/cuda/backend_cuda.cu). */
#include "backend.h"

/* Upper bound on a description's layers: far above any model, low enough
 * that a garbage count cannot make the check walk gigabytes. */
#define WARMUP_MAX_LAYERS 4096

dsv4kv_status dsv4kv_warmup(const dsv4kv_model_desc *m, DLDevice device, int32_t *kernels_loaded) {
  if (kernels_loaded) *kernels_loaded = 0;
  if (!m) return dsv4kv_fail(DSV4KV_ERR_NULL, "model is NULL");
  if (m->num_layers <= 0 || m->num_layers > WARMUP_MAX_LAYERS)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "model.num_layers = %d; must be in [1, %d]", m->num_layers,
                       WARMUP_MAX_LAYERS);
  if (!m->compress_ratios) return dsv4kv_fail(DSV4KV_ERR_NULL, "model.compress_ratios is NULL");
  if (m->index_topk < 0) return dsv4kv_fail(DSV4KV_ERR_VALUE, "model.index_topk = %d is negative", m->index_topk);
  if (m->window_size <= 0)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "model.window_size = %d; must be > 0", m->window_size);
  int compressed = 0;
  for (int32_t i = 0; i < m->num_layers; i++) {
    if (m->compress_ratios[i] < 0)
      return dsv4kv_fail(DSV4KV_ERR_VALUE, "model.compress_ratios[%d] = %d is negative", i, m->compress_ratios[i]);
    compressed |= m->compress_ratios[i] > 0;
  }
  record_layout l;
  dsv4kv_status st;
  if ((st = cache_desc_check(&m->k_cache, "model.k_cache", MAIN_CACHE_RECORDS, &l))) return st;
  if (compressed && (st = cache_desc_check(&m->indexer_cache, "model.indexer_cache", INDEXER_CACHE_RECORDS, &l)))
    return st;
  if (device.device_type == kDLCPU) {
    dsv4kv_clear_error();
    return DSV4KV_OK; /* nothing is loaded lazily on the CPU */
  }
  if (device.device_type != kDLCUDA && device.device_type != kDLCUDAManaged)
    return dsv4kv_fail(DSV4KV_ERR_DEVICE, "device type %d: only kDLCPU and kDLCUDA have backends",
                       (int)device.device_type);
  if (device.device_id < 0)
    return dsv4kv_fail(DSV4KV_ERR_DEVICE, "device.device_id = %d is negative", device.device_id);
  if (!cuda_backend_if_built())
    return dsv4kv_fail(DSV4KV_ERR_BACKEND_NOT_BUILT, "device is CUDA device %d, and %s", device.device_id,
                       cuda_unavailable_reason());
  if ((st = cuda_warmup(device.device_id, compressed, kernels_loaded))) return st;
  dsv4kv_clear_error();
  return DSV4KV_OK;
}
