#!/bin/sh
# verify_golden: every golden file through `dsv4kv verify`.
#   usage: verify_golden.sh PATH_TO_DSV4KV DEFAULT_GOLDEN_DIR
# The golden set is $DSV4KV_GOLDEN when set, else DEFAULT_GOLDEN_DIR
# (../shared/golden beside the checkout).  Not there: exit 77, which ctest
# reports as skipped (SKIP_RETURN_CODE), never as passed.  Otherwise the exit
# status is verify's: non-zero when any file fails.
dsv4kv=$1
golden=${DSV4KV_GOLDEN:-$2}
if [ ! -d "$golden" ]; then
  echo "verify_golden: SKIPPED: no golden directory at $golden (set DSV4KV_GOLDEN, or place the set at $2)"
  exit 77
fi
exec "$dsv4kv" verify "$golden"
