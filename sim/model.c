/* DeepSeek-V4 presets.
 *
 * DeepSeek-V4 interleaves three kinds of attention layer, all with a 128-token
 * sliding window over per-token keys (head dim 512: 448 NoPE + 64 RoPE dims):
 *   swa   sliding-window attention only (compress ratio 0);
 *   c4    plus a compressed cache of one entry per 4 tokens, of which an
 *         indexer (keys of head dim 128) selects the top-k per query token;
 *   c128  plus a compressed cache of one entry per 128 tokens, attended in full.
 * The V4.1 variant differs only in the compressed record (MXFP8 / NVFP4), which
 * is the --format option, so both share these presets.
 *
 * Layer counts per kind, from each model's config.json (`num_hidden_layers`,
 * the per-layer `compress_ratios`, `index_topk`, `sliding_window`,
 * `index_head_dim`, `num_nextn_predict_layers`):
 *
 *   DeepSeek-V4-Flash (huggingface.co/deepseek-ai/DeepSeek-V4-Flash):
 *     num_hidden_layers 43; compress_ratios [0, 0, 4, 128, 4, 128, ..., 4, 128,
 *     4, 0]: layers 0-1 SWA-only, then 4 and 128 alternating from layer 2 (even
 *     layers 4, odd layers 128) up to layer 42 (4), the 44th entry (0) being
 *     the MTP layer: 2 swa + 21 c4 + 20 c128; index_topk 512.
 *   DeepSeek-V4-Pro (huggingface.co/deepseek-ai/DeepSeek-V4-Pro):
 *     num_hidden_layers 61; compress_ratios [128, 128, 4, 128, 4, 128, ..., 4,
 *     128, 0]: layers 0-1 ratio 128, then 4 and 128 alternating from layer 2 up
 *     to layer 60 (128), the 62nd entry (0) the MTP layer: 30 c4 + 31 c128, no
 *     SWA-only layer; index_topk 1024.
 *   Both: sliding_window 128, head_dim 512 (qk_rope_head_dim 64), index_head_dim
 *   128, num_nextn_predict_layers 1.
 *
 * Read through: the compress_ratios arrays as public code quotes both
 * config.json files verbatim; NVIDIA NeMo AutoModel's DeepseekV4Config
 * (docs.nvidia.com/nemo/automodel/.../models/deepseek_v4/config: 43 layers,
 * index_topk 512, sliding_window 128, index_head_dim 128 -- Flash);
 * MindSpore MindFormers' DeepseekV4Config (mindspore.cn/mindformers/docs/
 * .../mindformers.models.DeepseekV4Config.html: 61 layers, index_topk 1024 --
 * Pro); the layer table of github.com/antirez/ds4 MODEL_CARD.md (a synopsis of
 * the Flash model card: layers 0, 1 window only, even layers from 2 ratio 4
 * with the indexer, odd layers from 3 ratio 128).
 *
 * The MTP layer (one SWA-only layer, only used for speculative decoding) is
 * left out of the whole-model totals. */
#include "model.h"

#include <string.h>

#define FLASH_SOURCE                                                                       \
  "deepseek-ai/DeepSeek-V4-Flash config.json: num_hidden_layers 43, compress_ratios [0, 0, " \
  "4, 128, ..., 4] (2 x 0, 21 x 4, 20 x 128; + 1 MTP layer), index_topk 512"
#define PRO_SOURCE                                                                        \
  "deepseek-ai/DeepSeek-V4-Pro config.json: num_hidden_layers 61, compress_ratios [128, " \
  "128, 4, 128, ..., 128] (30 x 4, 31 x 128; + 1 MTP layer), index_topk 1024"

static const sim_model presets[] = {
    {"deepseek-v4-flash",
     "deepseek-v4",
     "43 layers: 2 swa + 21 c4 (indexer top-k 512) + 20 c128",
     FLASH_SOURCE,
     512,
     128,
     128,
     10000,
     1,
     3,
     {{"swa", "sliding window only", 0, 0, 0, 2},
      {"c4", "compress ratio 4, indexer top-k 512", 4, 512, 1, 21},
      {"c128", "compress ratio 128, all entries", 128, 0, 0, 20}}},
    {"deepseek-v4-pro",
     "deepseek-v4-topk1024",
     "61 layers: 30 c4 (indexer top-k 1024) + 31 c128",
     PRO_SOURCE,
     512,
     128,
     128,
     10000,
     1,
     2,
     {{"c4", "compress ratio 4, indexer top-k 1024", 4, 1024, 1, 30},
      {"c128", "compress ratio 128, all entries", 128, 0, 0, 31}}},
};

#define NUM_PRESETS (sizeof presets / sizeof presets[0])

const sim_model *sim_model_find(const char *name) {
  for (size_t i = 0; i < NUM_PRESETS; i++)
    if (!strcmp(presets[i].name, name) || (presets[i].alias && !strcmp(presets[i].alias, name)))
      return &presets[i];
  return NULL;
}

const sim_model *sim_model_default(void) {
  return &presets[0];
}

void sim_model_list(FILE *f, int indent) {
  int width = 0;
  for (size_t i = 0; i < NUM_PRESETS; i++)
    if ((int)strlen(presets[i].name) > width)
      width = (int)strlen(presets[i].name);
  for (size_t i = 0; i < NUM_PRESETS; i++)
    fprintf(f, "%*s%-*s  %s%s%s%s\n", indent, "", width, presets[i].name, presets[i].describe,
            presets[i].alias ? " (also '" : "", presets[i].alias ? presets[i].alias : "",
            presets[i].alias ? "')" : "");
}

int32_t sim_model_layers(const sim_model *m) {
  int32_t n = 0;
  for (int i = 0; i < m->num_kinds; i++)
    n += m->kinds[i].num_layers;
  return n;
}

static int32_t gcd32(int32_t a, int32_t b) {
  while (b) {
    int32_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

int32_t sim_model_block_quantum(const sim_model *m) {
  int32_t q = 1;
  for (int i = 0; i < m->num_kinds; i++) {
    int32_t r = m->kinds[i].compress_ratio;
    if (r > 0)
      q = q / gcd32(q, r) * r;
  }
  return q;
}

void sim_model_size_of(const sim_model *m, dsv4kv_record format, dsv4kv_record indexer_format,
                       int32_t block_size, sim_model_size *out) {
  memset(out, 0, sizeof *out);
  int64_t bs = block_size, bf16 = 0;
  for (int i = 0; i < m->num_kinds; i++) {
    const sim_layer_kind *k = &m->kinds[i];
    int64_t layers = k->num_layers;
    out->page_swa += layers * bs * dsv4kv_record_bytes(DSV4KV_RECORD_V4);
    bf16 += layers * bs * 1024; /* 512 bf16 per token */
    if (k->compress_ratio > 0) {
      int64_t entries = bs / k->compress_ratio;
      out->page_comp += layers * entries * dsv4kv_record_bytes(format);
      bf16 += layers * entries * 1024;
      if (k->has_indexer) {
        out->page_idx += layers * entries * dsv4kv_record_bytes(indexer_format);
        bf16 += layers * entries * 256; /* 128 bf16 per entry */
      }
    }
  }
  out->page_total = out->page_swa + out->page_comp + out->page_idx;
  out->swa = (double)out->page_swa / (double)bs;
  out->comp = (double)out->page_comp / (double)bs;
  out->idx = (double)out->page_idx / (double)bs;
  out->total = (double)out->page_total / (double)bs;
  out->bf16_total = (double)bf16 / (double)bs;
}
