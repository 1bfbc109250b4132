/* index_ops: sparse-attention index preparation with dsv4kv.
 *
 * dsv4kv_compute_global_topk_indices_and_lens maps each token's top-k local
 * positions in the compressed cache (< 0 = none) through its request's block
 * table to global slots:
 *   global = block_table[req][x / bs] * bs + x % bs  (x >= 0, else -1)
 *   lens   = valid ? (entries written as slots) : 0
 * The program checks every output against that rule, then shows the bounds
 * checks: an entry whose page is past its block-table row is written as -1
 * and left out of lens; on a valid token it is skipped and counted, and the
 * call returns DSV4KV_WARN_SKIPPED with a message naming it (on a padding
 * token, valid = 0, it would not be counted).  Exits 0 when everything
 * matches.
 *
 * Build against an installed dsv4kv:
 *   cc index_ops.c $(pkg-config --cflags --libs dsv4kv) -o index_ops
 * or with CMake: see CMakeLists.txt beside this file. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <dsv4kv.h>

enum { T = 4, K = 4, R = 2, P = 3, BS = 4 };

static int check(int32_t topk[T][K], const int32_t req[T], int32_t bt[R][P], const uint8_t valid[T],
                 int32_t global[T][K], const int32_t lens[T]) {
  int bad = 0;
  for (int t = 0; t < T; t++) {
    int32_t count = 0;
    for (int j = 0; j < K; j++) {
      int32_t x = topk[t][j], want = -1;
      if (x >= 0 && x / BS < P) { /* else skipped: -1, not a slot */
        want = bt[req[t]][x / BS] * BS + x % BS;
        count++;
      }
      if (global[t][j] != want) {
        fprintf(stderr, "token %d, column %d: global %d, expected %d\n", t, j, global[t][j], want);
        bad++;
      }
    }
    if (lens[t] != (valid[t] ? count : 0)) {
      fprintf(stderr, "token %d: len %d, expected %d\n", t, lens[t], valid[t] ? count : 0);
      bad++;
    }
  }
  return bad;
}

int main(void) {
  /* two requests; compressed-cache pages of BS = 4 entries */
  int32_t block_table[R][P] = {{5, 2, 7}, {1, 4, 6}};
  int32_t topk[T][K] = {{0, 5, 11, -1}, {3, -1, -1, -1}, {9, 4, 1, 2}, {0, 1, 2, 3}};
  int32_t req[T] = {0, 0, 1, 1};
  uint8_t valid[T] = {1, 1, 1, 0}; /* token 3 is padding: len 0 */
  int32_t global[T][K], lens[T];

  int64_t tk_shape[2] = {T, K}, t_shape[1] = {T}, bt_shape[2] = {R, P};
  DLTensor topk_t = {topk, {kDLCPU, 0}, 2, {kDLInt, 32, 1}, tk_shape, NULL, 0};
  DLTensor req_t = {req, {kDLCPU, 0}, 1, {kDLInt, 32, 1}, t_shape, NULL, 0};
  DLTensor bt_t = {block_table, {kDLCPU, 0}, 2, {kDLInt, 32, 1}, bt_shape, NULL, 0};
  DLTensor valid_t = {valid, {kDLCPU, 0}, 1, {kDLUInt, 8, 1}, t_shape, NULL, 0}; /* bool */
  DLTensor global_t = {global, {kDLCPU, 0}, 2, {kDLInt, 32, 1}, tk_shape, NULL, 0};
  DLTensor lens_t = {lens, {kDLCPU, 0}, 1, {kDLInt, 32, 1}, t_shape, NULL, 0};
  int64_t skipped = -1;
  dsv4kv_options opt = {.skipped = &skipped};

  dsv4kv_status st = dsv4kv_compute_global_topk_indices_and_lens(&topk_t, &req_t, &bt_t, BS, &valid_t,
                                                                &global_t, &lens_t, &opt);
  if (st != DSV4KV_OK || skipped != 0) {
    fprintf(stderr, "global top-k: %s (%lld skipped): %s\n", dsv4kv_status_string(st),
            (long long)skipped, dsv4kv_last_error());
    return 1;
  }
  int bad = check(topk, req, block_table, valid, global, lens);
  printf("dsv4kv %s: global top-k of %d tokens x %d, block size %d\n", dsv4kv_version(), T, K, BS);
  for (int t = 0; t < T; t++)
    printf("  token %d (request %d): [%3d %3d %3d %3d] len %d\n", t, req[t], global[t][0], global[t][1],
           global[t][2], global[t][3], lens[t]);

  /* Position 13 is on page 3, past the 3-page block-table row: skipped. */
  topk[1][1] = 13;
  memset(global, 0x55, sizeof global);
  st = dsv4kv_compute_global_topk_indices_and_lens(&topk_t, &req_t, &bt_t, BS, &valid_t, &global_t,
                                                   &lens_t, &opt);
  /* the status string says what the code means, the message which entry */
  printf("out-of-range entry: status %s; skipped = %lld; message: %s\n",
         st == DSV4KV_WARN_SKIPPED ? "DSV4KV_WARN_SKIPPED" : dsv4kv_status_string(st), (long long)skipped,
         dsv4kv_last_error());
  if (st != DSV4KV_WARN_SKIPPED || skipped != 1 || dsv4kv_is_error(st)) {
    fprintf(stderr, "expected DSV4KV_WARN_SKIPPED with 1 skipped entry\n");
    bad++;
  }
  bad += check(topk, req, block_table, valid, global, lens);

  printf("%s\n", bad == 0 ? "OK" : "FAILED");
  return bad == 0 ? 0 : 1;
}
