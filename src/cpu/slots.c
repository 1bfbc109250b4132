/* Duplicate slots: when several rows of one call name the same slot, the
 * last row wins, as a sequential loop would leave it.  Finding the losers
 * first lets the rows run in parallel with a result independent of the
 * thread count. */
#include <stdlib.h>

#include "cpu/cpu.h"

typedef struct {
  int64_t slot, row;
} slot_row;

static int cmp_slot_row(const void *pa, const void *pb) {
  const slot_row *a = pa, *b = pb;
  if (a->slot != b->slot) return a->slot < b->slot ? -1 : 1;
  return a->row < b->row ? -1 : a->row > b->row;
}

static int writes(const tview *positions, int64_t t, int64_t ratio, int64_t cs_rows) {
  if (!positions) return 1;
  int64_t pos = tv_i64_1(positions, t);
  return pos >= 0 && pos % ratio == ratio - 1 && (pos / ratio) * ratio < cs_rows;
}

uint8_t *duplicate_slot_losers(const tview *slots, int64_t T, const tview *positions, int64_t ratio,
                               int64_t cs_rows, int *oom) {
  *oom = 0;
  if (T < 2) return NULL;
  slot_row *v = malloc((size_t)T * sizeof *v);
  if (!v) {
    *oom = 1;
    return NULL;
  }
  int64_t n = 0;
  for (int64_t t = 0; t < T; t++) {
    int64_t s = tv_i64_1(slots, t);
    if (s >= 0 && writes(positions, t, ratio, cs_rows)) v[n++] = (slot_row){s, t};
  }
  qsort(v, (size_t)n, sizeof *v, cmp_slot_row);
  uint8_t *mask = NULL;
  for (int64_t i = 0; i + 1 < n; i++) {
    if (v[i].slot != v[i + 1].slot) continue;
    if (!mask) {
      mask = calloc((size_t)T, 1);
      if (!mask) {
        *oom = 1;
        break;
      }
    }
    mask[v[i].row] = 1; /* a later row has the same slot */
  }
  free(v);
  return mask;
}
