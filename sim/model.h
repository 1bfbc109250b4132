/* Model presets: the attention-layer kinds whose K caches a run exercises,
 * and how many layers of each kind the whole model has (for sizing). */
#ifndef DSV4KV_SIM_MODEL_H
#define DSV4KV_SIM_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "dsv4kv.h"

#define SIM_MAX_KINDS 3

/* One attention-layer kind.  The simulator runs one representative layer of
 * each kind and reports per kind; the sizing multiplies by num_layers. */
typedef struct {
  const char *label;      /* "swa", "c4", "c128"                                 */
  const char *describe;   /* one line for --help and the report                   */
  int32_t compress_ratio; /* 0 = SWA-only; else one compressed entry per ratio    */
  int32_t topk;           /* index top-k over compressed entries; 0 with a ratio
                             means "all entries" (dense over the compressed cache) */
  int has_indexer;        /* the layer keeps an indexer K cache (head dim 128)    */
  int32_t num_layers;     /* layers of this kind in the whole model               */
} sim_layer_kind;

typedef struct {
  const char *name;
  const char *alias;    /* an older name that still selects it, or NULL */
  const char *describe; /* one line: layers per kind, top-k             */
  const char *source;   /* where the layer counts come from             */
  int32_t head_dim;         /* main K head dim (512: 448 NoPE + 64 RoPE)  */
  int32_t indexer_head_dim; /* 128                                        */
  int32_t window;           /* sliding window (tokens)                    */
  int32_t rope_theta;       /* RoPE base of the indexer keys              */
  int32_t mtp_layers;       /* MTP layers (SWA-only; not counted)         */
  int num_kinds;
  sim_layer_kind kinds[SIM_MAX_KINDS];
} sim_model;

/* The preset called `name` (or its alias), or NULL. */
const sim_model *sim_model_find(const char *name);
const sim_model *sim_model_default(void);
/* Writes one "name  description" line per preset, each indented by `indent`
 * spaces, the descriptions in one column. */
void sim_model_list(FILE *f, int indent);

/* Layers of the whole model (MTP layers not counted). */
int32_t sim_model_layers(const sim_model *m);
/* The least common multiple of the model's compress ratios: --block-size
 * must be a multiple of it. */
int32_t sim_model_block_quantum(const sim_model *m);

/* Whole-model cache bytes: every layer's SWA cache (v4 records, one per
 * token), compressed cache (`format`, one record per compress_ratio tokens)
 * and indexer cache (`indexer_format`, likewise), as this simulator pages
 * them: a page holds block_size tokens of every cache of every layer. */
typedef struct {
  int64_t page_swa, page_comp, page_idx, page_total; /* bytes of one page */
  double swa, comp, idx, total;                      /* bytes per token   */
  double bf16_total;                                 /* the same keys in bf16, per token */
} sim_model_size;

void sim_model_size_of(const sim_model *m, dsv4kv_record format, dsv4kv_record indexer_format,
                       int32_t block_size, sim_model_size *out);

/* GiB (2^30 bytes) per million tokens at `bytes_per_token`. */
static inline double sim_gib_per_mtok(double bytes_per_token) {
  return bytes_per_token * 1e6 / 1073741824.0;
}

#endif
