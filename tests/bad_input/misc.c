/*
 * test_bad_input: dsv4kv_last_error() is cleared by a successful call and
 * kept per thread; bools passed as kDLUInt / 8 are accepted.
 */
#include <stdio.h>
#include <stdlib.h>

#include <pthread.h>

#include "bad_input.h"

/* =================================================================== misc */
/* A successful call clears the message; bools as kDLUInt/8 are accepted. */
void sec7_last_error_cleared_and_bool_as_uint8(void **state) {
  (void)state;
  BEGIN_CASES();
  const int32_t topk[12] = {0, 5, -1, 7, 1, 2, 3, 4, -1, -1, 6, 0};
  const int32_t t2r[3] = {0, 1, 1};
  gt_fix f;
  bi_gt_init(&f, topk, t2r);
  f.bs = 0;
  assert_status(bi_gt_call(&f), DSV4KV_ERR_VALUE);
  assert_true(strlen(dsv4kv_last_error()) > 0);
  f.bs = 4;
  f.valid.v.t.dtype = dt_u8();
  assert_status(bi_gt_call(&f), DSV4KV_OK);
  assert_string_equal(dsv4kv_last_error(), "");
  bi_gt_free(&f);
  END_CASES();
}

/* dsv4kv_last_error() is per thread: an error in another thread does not
 * change this thread's message. */
static void *other_thread(void *arg) {
  gt_fix *f = (gt_fix *)arg;
  int32_t bs = f->bs;
  f->bs = 0;
  dsv4kv_status st = bi_gt_call(f);
  f->bs = bs;
  char *copy = (char *)malloc(256);
  snprintf(copy, 256, "%d|%s", (int)st, dsv4kv_last_error());
  return copy;
}

void sec7_last_error_is_thread_local(void **state) {
  (void)state;
  const int32_t topk[12] = {0, 5, -1, 7, 1, 2, 3, 4, -1, -1, 6, 0};
  const int32_t t2r[3] = {0, 1, 1};
  gt_fix f;
  bi_gt_init(&f, topk, t2r);
  assert_status(dsv4kv_record_from_width(1, &(dsv4kv_record){0}), DSV4KV_ERR_FORMAT);
  char mine[256];
  snprintf(mine, sizeof(mine), "%s", dsv4kv_last_error());
  assert_true(strlen(mine) > 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, other_thread, &f), 0);
  void *ret = NULL;
  pthread_join(th, &ret);
  char *theirs = (char *)ret;
  assert_non_null(theirs);
  assert_true(strncmp(theirs, "6|", 2) == 0);
  assert_true(strstr(theirs, "block_size") != NULL);
  assert_string_equal(dsv4kv_last_error(), mine);
  free(theirs);
  bi_gt_free(&f);
}
