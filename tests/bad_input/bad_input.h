/*
 * Shared pieces of test_bad_input (SPEC §7 errors and bad input; the runner
 * is tests/test_bad_input.c): the soft-failure macros, bi_check_call, the
 * fenced test tensors (tt), the CUDA-label helpers, the global top-k fixture
 * (index_ops.c; misc.c uses it too) and the tests each file exposes.
 */
#ifndef DSV4KV_TEST_BAD_INPUT_H
#define DSV4KV_TEST_BAD_INPUT_H

#include <stdio.h>

#include "support/support.h"

#define POISON 0xA5
#define IPOISON 0x5A5A5A5A

/* Soft failures: every case of a table runs; the test fails at its end if
 * any case failed (END_CASES). */
extern int bi_g_fail;
#define soft_fail(...)                 \
  do {                                 \
    printf("FAIL: " __VA_ARGS__);      \
    printf("\n");                      \
    bi_g_fail++;                       \
  } while (0)
#define soft_true(c, ...)              \
  do {                                 \
    if (!(c)) soft_fail(__VA_ARGS__);  \
  } while (0)
#define BEGIN_CASES() (bi_g_fail = 0)
#define END_CASES()                                                            \
  do {                                                                         \
    if (bi_g_fail) fail_msg("%d case(s) failed (see FAIL: lines)", bi_g_fail); \
  } while (0)

/* Checks status, message and (for errors) that the message names `name`
 * ("a|b": either).  Returns 1 when the status matched. */
int bi_check_call(dsv4kv_status got, dsv4kv_status want, const char *name, const char *what);

typedef struct {
  fbuf fb;
  void *d;
  tview v;
} tt;
void *bi_tt_make(tt *t, DLDataType dt, size_t esz, int ndim, const int64_t *shape, const void *vals, int fillbyte);
void bi_tt_free(tt *t);
void bi_set_cuda(DLTensor *t);
/* Host buffers labelled CUDA, with host counters in the options: a build
 * without the backend answers BACKEND_NOT_BUILT; with it, the counters are
 * refused (ERR_VALUE) before anything is launched on those pointers. */
dsv4kv_status bi_want_cuda_host(void);

/* The global top-k fixture (SPEC §5.1, index_ops.c). */
typedef struct {
  tt topk, t2r, bt, valid, g, l;
  const DLTensor *p[6];
  int32_t bs;
  int64_t sk;
  dsv4kv_options opt;
} gt_fix;
void bi_gt_init(gt_fix *f, const int32_t *topk, const int32_t *t2r);
dsv4kv_status bi_gt_call(gt_fix *f);
void bi_gt_free(gt_fix *f);

/* The tests, in the order the runner lists them. */
/* insert_gather.c */
void sec7_insert_argument_errors(void **state);
void sec7_insert_bad_slot_values(void **state);
void sec7_gather_argument_errors(void **state);
void sec7_gather_bad_index_values(void **state);
/* index_ops.c */
void sec7_global_topk_argument_errors(void **state);
void sec7_global_topk_bad_index_values(void **state);
void sec7_combine_argument_errors(void **state);
void sec7_combine_bad_index_values(void **state);
void sec7_combine_alloc_errors(void **state);
void sec7_flashinfer_argument_errors(void **state);
void sec7_flashinfer_bad_index_values(void **state);
void sec7_index_ops_strided_input_rejected_or_honoured(void **state);
/* indexer.c */
void sec7_indexer_argument_errors(void **state);
void sec7_indexer_bad_index_values(void **state);
/* misc.c */
void sec7_last_error_cleared_and_bool_as_uint8(void **state);
void sec7_last_error_is_thread_local(void **state);

#endif
