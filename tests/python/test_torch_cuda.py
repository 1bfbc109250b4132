"""torch on a GPU: the golden files as CUDA tensors, CUDA against CPU on
random inputs, and a torch CUDA graph of one decode step captured and
replayed.  Skipped where torch, a GPU or the CUDA backend is missing."""
import os

import numpy as np
import pytest

import dsv4kv
import golden

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not (torch.cuda.is_available() and dsv4kv.cuda_available()),
                                reason="needs torch with CUDA and dsv4kv's CUDA backend: %s"
                                % (dsv4kv.cuda_unavailable_reason() or "torch sees no GPU"))
FILES = golden.golden_files()


@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(p) for p in FILES])
def test_golden_cuda(path):
    golden.run(path, device="cuda")


def _step_inputs(g, T=64, pages=32, bs=64, R=16, K=128):
    """A decode step's inputs on the CPU (torch), some entries out of range."""
    k = (torch.randn(T, 512, generator=g) * 4).to(torch.bfloat16)
    slots = torch.randperm(pages * bs, generator=g)[:T].to(torch.int64)
    slots[3], slots[7] = -1, pages * bs + 5
    kpre = torch.randn(T, 128, generator=g).to(torch.bfloat16)
    pos = torch.randint(0, 4000, (T,), generator=g, dtype=torch.int64)
    cos_sin = torch.rand(4096, 64, generator=g) * 2 - 1
    weight = torch.rand(128, generator=g) + 0.5
    islots = torch.randint(0, pages * bs, (T,), generator=g, dtype=torch.int64)
    topk = torch.randint(-5, bs * 8 + 10, (T, K), generator=g, dtype=torch.int32)
    req = torch.randint(0, R, (T,), generator=g, dtype=torch.int32)
    bt = torch.randint(0, pages, (R, 8), generator=g, dtype=torch.int32)
    valid = torch.rand(T, generator=g) > 0.1
    seq = torch.randint(0, bs * 8, (R,), generator=g, dtype=torch.int32)
    gl = torch.randint(0, 9, (R,), generator=g, dtype=torch.int32)
    return dict(k=k, slots=slots, kpre=kpre, pos=pos, cos_sin=cos_sin, weight=weight, islots=islots, topk=topk,
                req=req, bt=bt, valid=valid, seq=seq, gl=gl)


def _step(x, cache, icache, out):
    """Insert, indexer store, index build, gather: one decode step's calls."""
    dsv4kv.quantize_and_insert_k_cache(x["k"], cache, x["slots"])
    dsv4kv.indexer_k_norm_rope_store(x["kpre"], x["pos"], x["cos_sin"], x["weight"], 1e-6, icache, x["islots"], 4,
                                     False)
    g, lens = dsv4kv.compute_global_topk_indices_and_lens(x["topk"], x["req"], x["bt"], 64, x["valid"])
    dsv4kv.dequantize_and_gather_k_cache(out, cache, x["seq"], x["gl"], x["bt"], 64, 0)
    return g, lens


def _caches(device):
    return (torch.full((32, 64, 584), 0x11, dtype=torch.uint8, device=device),
            torch.full((32, 64, 132), 0x22, dtype=torch.uint8, device=device),
            torch.full((16, 8, 512), -7.0, dtype=torch.bfloat16, device=device))


def _same(a, b, what):
    assert torch.equal(a.cpu().view(torch.uint8) if a.dtype != torch.bool else a.cpu(),
                       b.cpu().view(torch.uint8) if b.dtype != torch.bool else b.cpu()), what


def test_cuda_equals_cpu_random():
    g = torch.Generator().manual_seed(11)
    for _ in range(5):
        x = _step_inputs(g)
        cpu, gpu = _caches("cpu"), _caches("cuda")
        xg = {k: v.cuda() for k, v in x.items()}
        r_cpu = _step(x, *cpu)
        skipped_cpu = dsv4kv.last_report()["skipped"]
        r_gpu = _step(xg, *gpu)
        assert dsv4kv.last_report()["skipped"] == skipped_cpu  # the gather's report, read back from the device
        for a, b, what in zip(cpu + r_cpu, gpu + r_gpu, ("k_cache", "indexer cache", "out", "global", "lens")):
            _same(a, b, what)


def test_torch_cuda_graph_decode_step():
    g = torch.Generator().manual_seed(12)
    x = _step_inputs(g)
    xg = {k: v.cuda() for k, v in x.items()}
    cache, icache, out = _caches("cuda")
    cpu = _caches("cpu")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up outside the capture, as torch asks
        _step(xg, cache, icache, out)
        _step(x, *cpu)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        gl_out, lens_out = _step(xg, cache, icache, out)
    for _ in range(4):  # fresh inputs copied into the captured buffers, then replay
        new = _step_inputs(g)
        for key in xg:
            xg[key].copy_(new[key])
        out.fill_(-7.0)
        cpu[2].fill_(-7.0)
        graph.replay()
        torch.cuda.synchronize()
        r_cpu = _step(new, *cpu)
        for a, b, what in zip(cpu + r_cpu, (cache, icache, out, gl_out, lens_out),
                              ("k_cache", "indexer cache", "out", "global", "lens")):
            _same(a, b, "graph replay: " + what)


def test_distinct_slots_promise_on_cuda_equals_cpu():
    """Past 1024 rows (where CUDA would mark duplicates) and at decode size,
    with distinct slots promised: the CPU's bytes."""
    g = torch.Generator().manual_seed(13)
    for T in (200, 3000):
        pages = (T + 63) // 64 + 4
        k = (torch.randn(T, 512, generator=g) * 3).to(torch.bfloat16)
        slots = torch.randperm(pages * 64, generator=g)[:T].to(torch.int64)
        slots[5] = -1
        for width in (584, 528, 288):
            cpu = torch.full((pages, 64, width), 0x33, dtype=torch.uint8)
            gpu = cpu.cuda()
            dsv4kv.quantize_and_insert_k_cache(k, cpu, slots, bytes_per_token=width)
            dsv4kv.quantize_and_insert_k_cache(k.cuda(), gpu, slots.cuda(), bytes_per_token=width,
                                               distinct_slots=True)
            _same(cpu, gpu, "insert %d rows, record %d" % (T, width))
        kpre = torch.randn(T, 128, generator=g).to(torch.bfloat16)
        pos = torch.arange(T, dtype=torch.int64)
        cos_sin = torch.rand(T + 8, 64, generator=g) * 2 - 1
        weight = torch.rand(128, generator=g) + 0.5
        for fp4 in (False, True):
            cpu = torch.full((pages, 64, 68 if fp4 else 132), 0x44, dtype=torch.uint8)
            gpu = cpu.cuda()
            dsv4kv.indexer_k_norm_rope_store(kpre, pos, cos_sin, weight, 1e-6, cpu, slots, 1, fp4)
            dsv4kv.indexer_k_norm_rope_store(kpre.cuda(), pos.cuda(), cos_sin.cuda(), weight.cuda(), 1e-6, gpu,
                                             slots.cuda(), 1, fp4, distinct_slots=True)
            _same(cpu, gpu, "indexer store %d rows, fp4 %s" % (T, fp4))
