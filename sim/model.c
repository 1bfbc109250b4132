/* DeepSeek-V4 presets.
 *
 * DeepSeek-V4 interleaves three kinds of attention layer, all with a 128-token
 * sliding window over per-token keys (head dim 512: 448 NoPE + 64 RoPE dims):
 *   swa   sliding-window attention only;
 *   c4    plus a compressed cache of one entry per 4 tokens, of which an
 *         indexer (keys of head dim 128) selects the top-k per query token;
 *   c128  plus a compressed cache of one entry per 128 tokens, attended in full.
 * The V4.1 variant differs only in the compressed record (MXFP8 / NVFP4), which
 * is the --format option, so both share these presets. */
#include "model.h"

#include <string.h>

static const sim_model presets[] = {
    {"deepseek-v4",
     "swa + c4 (indexer top-k 512) + c128, window 128",
     512,
     128,
     128,
     10000,
     3,
     {{"swa", "sliding window only", 0, 0, 0},
      {"c4", "compress ratio 4, indexer top-k 512", 4, 512, 1},
      {"c128", "compress ratio 128, all entries", 128, 0, 0}}},
    {"deepseek-v4-topk1024",
     "swa + c4 (indexer top-k 1024) + c128, window 128",
     512,
     128,
     128,
     10000,
     3,
     {{"swa", "sliding window only", 0, 0, 0},
      {"c4", "compress ratio 4, indexer top-k 1024", 4, 1024, 1},
      {"c128", "compress ratio 128, all entries", 128, 0, 0}}},
};

const sim_model *sim_model_find(const char *name) {
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
    if (!strcmp(presets[i].name, name))
      return &presets[i];
  return NULL;
}

const sim_model *sim_model_default(void) {
  return &presets[0];
}

void sim_model_list(FILE *f, int indent) {
  size_t n = sizeof presets / sizeof presets[0];
  int width = 0;
  for (size_t i = 0; i < n; i++)
    if ((int)strlen(presets[i].name) > width)
      width = (int)strlen(presets[i].name);
  for (size_t i = 0; i < n; i++)
    fprintf(f, "%*s%-*s  %s\n", indent, "", width, presets[i].name, presets[i].describe);
}
