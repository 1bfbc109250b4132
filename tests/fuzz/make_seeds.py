#!/usr/bin/env python3
"""Writes the seed corpora of the libFuzzer targets (tests/fuzz/corpus/):
small golden-style safetensors files, one per op, that golden_check_file
accepts, a few malformed ones, and trace snippets (each input's first byte is
fuzz_trace.c's mode byte).  Rerun after changing it; the output is committed.
    python3 tests/fuzz/make_seeds.py"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = {"BOOL": 1, "U8": 1, "I32": 4, "I64": 8, "F32": 4, "BF16": 2}


def st(meta, tensors, header_len=None):
    """safetensors bytes: tensors = [(name, dtype, shape, bytes or None)]."""
    head, data = {}, b""
    if meta:
        head["__metadata__"] = meta
    for name, dtype, shape, raw in tensors:
        n = SIZES[dtype]
        for d in shape:
            n *= d
        raw = raw if raw is not None else bytes(n)
        head[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(head, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h) if header_len is None else header_len) + h + data


def i32(*v):
    return struct.pack("<%di" % len(v), *v)


def i64(*v):
    return struct.pack("<%dq" % len(v), *v)


def safetensors_seeds():
    topk = {"op": "compute_global_topk_indices_and_lens", "block_size": "4"}
    yield "topk.safetensors", st(topk, [
        ("topk_indices", "I32", [2, 4], i32(0, 5, -1, 9, 3, -1, -1, 8)),
        ("token_to_req_indices", "I32", [2], i32(0, 1)),
        ("block_table", "I32", [2, 3], i32(10, 11, 12, 20, 21, 22)),
        ("is_valid_token", "BOOL", [2], b"\x01\x00"),
        ("expected.global_topk_indices", "I32", [2, 4], i32(40, 45, -1, 49, 83, -1, -1, 88)),
        ("expected.topk_lens", "I32", [2], i32(3, 0))])
    ins = {"op": "quantize_and_insert_k_cache", "record": "nvfp4", "record_bytes": "288",
           "block_size": "1", "block_stride": "288"}
    yield "insert_dense.safetensors", st(dict(ins, k_cache_layout="dense", num_blocks="2"), [
        ("k", "BF16", [1, 512], None), ("slot_mapping", "I64", [1], i64(1)),
        ("k_cache", "U8", [2, 288], None), ("expected.k_cache", "U8", [2, 288], None)])
    yield "insert_sparse.safetensors", st(dict(ins, k_cache_layout="sparse", num_blocks="100000"), [
        ("k", "BF16", [1, 512], None), ("slot_mapping", "I64", [1], i64(99999)),
        ("k_cache.block_ids", "I64", [2], i64(99999, 7)),
        ("k_cache.blocks", "U8", [2, 288], None), ("expected.k_cache.blocks", "U8", [2, 288], None)])
    gather = {"op": "dequantize_and_gather_k_cache", "record": "nvfp4", "block_size": "1",
              "block_stride": "288", "offset": "0", "k_cache_layout": "dense", "num_blocks": "2"}
    yield "gather.safetensors", st(gather, [
        ("out", "BF16", [1, 2, 512], None), ("expected.out", "BF16", [1, 2, 512], None),
        ("k_cache", "U8", [2, 288], None), ("seq_lens", "I32", [1], i32(2)),
        ("block_table", "I32", [1, 2], i32(0, 1))])
    comb = {"op": "combine_topk_swa_indices", "window_size": "2", "compress_ratio": "4", "topk": "2",
            "M": "8", "N": "8", "out_prefill": "-1 (as the out=None path)"}
    yield "combine.safetensors", st(comb, [
        ("topk_indices", "I32", [2, 2], i32(0, 1, 1, -1)), ("query_start_loc", "I32", [2], i32(0, 2)),
        ("seq_lens", "I32", [1], i32(8)), ("gather_lens", "I32", [1], i32(2)),
        ("combined_indices", "I32", [2, 128], i32(*[-1] * 256)),
        ("combined_lens", "I32", [2], i32(0, 0)),
        ("expected.combined_indices", "I32", [2, 128], None), ("expected.combined_lens", "I32", [2], None)])
    fi = {"op": "build_flashinfer_mixed_sparse_indices", "swa_block_size": "4", "swa_block_span": "none",
          "compressed_block_size": "4", "compressed_block_span": "none", "window_size": "2",
          "compress_ratio": "4", "topk": "4", "decode_compressed_indices_are_local": "0"}
    yield "flashinfer.safetensors", st(fi, [
        ("decode_swa_indices", "I32", [1, 2], i32(0, 1)), ("prefill_topk_indices", "I32", [1, 4], None),
        ("decode_compressed_indices", "I32", [1, 4], None),
        ("query_start_loc", "I32", [3], i32(0, 1, 2)), ("seq_lens", "I32", [2], i32(4, 4)),
        ("replay_start", "I32", [2], i32(0, 0)), ("token_to_req_indices", "I32", [2], i32(0, 1)),
        ("swa_block_table", "I32", [2, 1], i32(0, 1)), ("compressed_block_table", "I32", [2, 1], i32(0, 1)),
        ("expected.sparse_indices", "I32", [2, 6], None), ("expected.sparse_topk_lens", "I32", [2], None)])
    idx = {"op": "indexer_k_norm_rope_store", "use_fp4_cache": "1", "mx_scale": "0", "shuffle": "0",
           "block_size": "1", "block_stride": "68", "record_bytes": "68", "rms_norm_eps": "1e-06",
           "compress_ratio": "1", "k_cache_layout": "dense"}
    yield "indexer.safetensors", st(idx, [
        ("k_pre", "BF16", [1, 128], None), ("positions", "I64", [1], i64(0)),
        ("cos_sin_cache", "F32", [1, 64], None), ("rms_norm_weight", "BF16", [128], None),
        ("kv_slot_mapping", "I64", [1], i64(0)),
        ("k_cache", "U8", [1, 68], None), ("expected.k_cache", "U8", [1, 68], None)])
    # malformed
    yield "bad_json.safetensors", struct.pack("<Q", 16) + b'{"a":{"dtype":"U'
    yield "len_past_eof.safetensors", st(topk, [("a", "U8", [1], b"x")], header_len=1 << 40)
    yield "dup_meta.safetensors", struct.pack("<Q", 40) + b'{"__metadata__":{"op":"x","op":"y"}}    '
    yield "zero_extent.safetensors", st(topk, [("topk_indices", "I32", [1 << 40, 0], b"")])
    yield "sparse_dup.safetensors", st(dict(ins, k_cache_layout="sparse", num_blocks="9"), [
        ("k", "BF16", [1, 512], None), ("slot_mapping", "I64", [1], i64(0)),
        ("k_cache.block_ids", "I64", [2], i64(3, 3)),
        ("k_cache.blocks", "U8", [2, 288], None), ("expected.k_cache.blocks", "U8", [2, 288], None)])


def trace_seeds():
    moon = (b'{"timestamp": 0, "input_length": 600, "output_length": 20, "hash_ids": [0, 1]}\n'
            b'{"timestamp": 5, "input_length": 700, "output_length": 20, "hash_ids": [0, 2]}\n'
            b'{"timestamp": 3, "input_length": 10, "output_length": 0}\n')
    azure = (b"TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
             b"2023-11-16 18:15:46.6805900,374,44\r\n2023-11-16 18:15:47.1,1200,12\r\n")
    rows = b"2023-11-16 18:15:46.6805900,374,44\r\n2023-11-16T18:15:50,1,0\r\n"
    yield "mooncake.jsonl", b"\x00" + moon
    yield "mooncake_skip_bad.jsonl", b"\x05" + moon + b'{"timestamp": 9, "input_length": "many"}\nnot json\n'
    yield "azure.csv", b"\x00" + azure
    yield "azure_bom_max1.csv", b"\x04\xef\xbb\xbf" + azure
    yield "csv_rows.csv", b"\x02" + rows
    yield "csv_rows_bad.csv", b"\x03" + rows + b"2023-13-16 18:15:49.0,100,12\r\n,,\r\n1,2,3,4\r\n"
    yield "nul_and_blank.jsonl", b"\x01\n \n" + moon[:40] + b"\x00" + moon[40:]
    yield "long_line.jsonl", b"\x00" + moon[:60] + b" " * 400 + b"\n"
    yield "not_a_trace.txt", b"\x00hello, world\n"


def main():
    for target, seeds in (("safetensors", safetensors_seeds()), ("trace", trace_seeds())):
        d = os.path.join(HERE, "corpus", target)
        os.makedirs(d, exist_ok=True)
        for name, raw in seeds:
            with open(os.path.join(d, name), "wb") as f:
                f.write(raw)


if __name__ == "__main__":
    main()
