/* Model presets: the attention-layer kinds whose K caches a run exercises. */
#ifndef DSV4KV_SIM_MODEL_H
#define DSV4KV_SIM_MODEL_H

#include <stdint.h>
#include <stdio.h>

#define SIM_MAX_KINDS 3

/* One attention-layer kind.  The simulator runs one representative layer of
 * each kind and reports per kind. */
typedef struct {
  const char *label;      /* "swa", "c4", "c128"                                 */
  const char *describe;   /* one line for --help and the report                   */
  int32_t compress_ratio; /* 0 = SWA-only; else one compressed entry per ratio    */
  int32_t topk;           /* index top-k over compressed entries; 0 with a ratio
                             means "all entries" (dense over the compressed cache) */
  int has_indexer;        /* the layer keeps an indexer K cache (head dim 128)    */
} sim_layer_kind;

typedef struct {
  const char *name;
  const char *describe;
  int32_t head_dim;         /* main K head dim (512: 448 NoPE + 64 RoPE)  */
  int32_t indexer_head_dim; /* 128                                        */
  int32_t window;           /* sliding window (tokens)                    */
  int32_t rope_theta;       /* RoPE base of the indexer keys              */
  int num_kinds;
  sim_layer_kind kinds[SIM_MAX_KINDS];
} sim_model;

/* The preset called `name`, or NULL. */
const sim_model *sim_model_find(const char *name);
const sim_model *sim_model_default(void);
/* Writes one "name  description" line per preset, each indented by `indent`
 * spaces, the descriptions in one column. */
void sim_model_list(FILE *f, int indent);

#endif
