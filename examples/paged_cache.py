"""A paged MXFP8 key cache as a serving engine drives it, on the CPU with numpy:
three requests' prompts written into pages picked from a shuffled pool through
their block tables, each request's last tokens gathered back, and a slot that
names no page skipped and reported instead of written.

    pip install ".[numpy]" && python examples/paged_cache.py

Prints what it did and "OK", or exits 1.  tests/python/test_examples.py runs it.
"""
import sys

import ml_dtypes
import numpy as np

import dsv4kv

BS, PAGES = 64, 16  # tokens a page, pages in the pool
rng = np.random.default_rng(0)

seq_lens = np.array([100, 37, 190], np.int32)  # prompt lengths of three requests
pool = rng.permutation(PAGES).astype(np.int32)  # the pages an allocator would hand out
cols = int(-(-seq_lens.max() // BS))  # block-table columns: pages of the longest request
block_table = np.full((len(seq_lens), cols), -1, np.int32)
taken = 0
for r, n in enumerate(seq_lens):
    need = -(-int(n) // BS)
    block_table[r, :need] = pool[taken:taken + need]
    taken += need

# the prompts' keys, one row a token in request order, and each row's slot: page * BS + offset
k = rng.standard_normal((int(seq_lens.sum()), 512)).astype(ml_dtypes.bfloat16)
pos = np.concatenate([np.arange(n) for n in seq_lens])
req = np.repeat(np.arange(len(seq_lens)), seq_lens)
slots = (block_table[req, pos // BS].astype(np.int64) * BS + pos % BS)

# [pages, tokens a page, bytes a token]: in this 3-D view the last extent, 528, says the records are MXFP8
cache = np.zeros((PAGES, BS, dsv4kv.MXFP8_BYTES_PER_TOKEN), np.uint8)
dsv4kv.quantize_and_insert_k_cache(k, cache, slots, block_size=BS)
print("inserted %d tokens of %d requests into %d of %d pages" % (len(k), len(seq_lens), taken, PAGES))

# each request's last 32 tokens, dequantized to bf16 (the attention kernel's input)
last = 32
out = np.zeros((len(seq_lens), last, 512), ml_dtypes.bfloat16)
dsv4kv.dequantize_and_gather_k_cache(out, cache, seq_lens, np.full(len(seq_lens), last, np.int32), block_table,
                                     block_size=BS, offset=0)
bad = 0
for r, n in enumerate(seq_lens):
    rows = np.flatnonzero(req == r)[n - last:]
    x, y = k[rows].astype(np.float32), out[r].astype(np.float32)
    amax = np.abs(x).reshape(last, 16, 32).max(axis=2).repeat(32, axis=1)  # each 32-dim block's largest
    err = np.abs(y - x)
    bad += int((err > np.abs(x) / 16 + amax / 1e3).sum())  # e4m3: 3 mantissa bits, one scale a block
    print("request %d: last %d of %d tokens back, largest error %.4f" % (r, last, n, err.max()))

# a slot past the pool: skipped and counted, the other rows written
slots_bad = slots[:4].copy()
slots_bad[2] = PAGES * BS + 5
dsv4kv.quantize_and_insert_k_cache(k[:4], cache, slots_bad, block_size=BS)
report = dsv4kv.last_report()
print("a slot past the pool: %d skipped (%s)" % (report["skipped"], report["message"]))
bad += report["skipped"] != 1

print("OK" if bad == 0 else "FAILED: %d values out of bounds" % bad)
sys.exit(0 if bad == 0 else 1)
