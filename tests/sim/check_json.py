#!/usr/bin/env python3
"""Checks a `dsv4kv run --json` report (schema 2) with a real JSON parser.

    check_json.py schema REPORT VERSION_LINE   the schema's fields (meta, runs,
                                               latency percentiles, time series)
    check_json.py budget REPORT BYTES          pools sized from --kv-cache-memory
    check_json.py formats REPORT F1,F2,...     one run per format, the comparison

VERSION_LINE is the output of `dsv4kv --version`.  Exit status 0 when every
check holds; otherwise the failed check is printed and the status is 1.
"""
import json
import math
import re
import socket
import sys

# Whole-model bytes per token of deepseek-v4-flash (2 swa + 21 c4 + 20 c128
# layers) per format, from the record sizes: swa 43 x 584, compressed
# 21 x rec / 4 + 20 x rec / 128, indexer 21 x rec / 4.
FLASH_BPT = {("v4", "fp8"): 28962.25, ("mxfp8", "fp8"): 28659.5,
             ("nvfp4", "mxfp4"): 27026.0}
SERIES = ("step", "virtual_time_s", "pages_in_use", "running", "queued",
          "batch_tokens", "tokens")


def fail(msg):
    print("check_json: FAIL:", msg)
    sys.exit(1)


def need(cond, msg):
    if not cond:
        fail(msg)


def check_dist(d, what):
    for k in ("n", "p50", "p90", "p99", "mean", "max"):
        need(isinstance(d.get(k), (int, float)), f"{what}.{k} missing")
    need(d["n"] > 0, f"{what}.n is 0")
    need(0 <= d["p50"] <= d["p90"] <= d["p99"] <= d["max"],
         f"{what}: percentiles not ordered: {d}")
    need(d["mean"] <= d["max"], f"{what}: mean above max")


def check_series(run):
    ts = run["time_series"]
    n = ts["points"]
    need(0 < n <= 2000 and ts["max_points"] == 2000, f"points {n}")
    for k in SERIES:
        need(len(ts[k]) == n, f"time_series.{k} has {len(ts[k])} of {n}")
    steps = run["steps"]
    need(ts["step"][0] == 0 and ts["step"][-1] == steps - 1,
         f"series covers steps {ts['step'][0]}..{ts['step'][-1]} of {steps}")
    need(all(a < b for a, b in zip(ts["step"], ts["step"][1:])), "steps not increasing")
    need(all(a <= b for a, b in zip(ts["virtual_time_s"], ts["virtual_time_s"][1:])),
         "virtual time goes back")
    need(abs(ts["virtual_time_s"][-1] - run["virtual_time_s"]) < 1e-6,
         "the last point is not the end of the run")
    need(max(ts["pages_in_use"]) <= run["pages"]["peak_used"], "pages above the peak")
    need(ts["tokens"][-1] == run["totals"]["tokens"], "tokens do not add up")
    if steps > 2000:  # downsampled: evenly spaced, every_steps > 1
        need(ts["every_steps"] > 1, "a long run was not downsampled")
        gaps = {b - a for a, b in zip(ts["step"][:-2], ts["step"][1:-1])}
        need(gaps == {ts["every_steps"]}, f"uneven spacing {sorted(gaps)[:5]}")


def check_schema(rep, version_line):
    need(rep["schema_version"] == 2, "schema_version")
    need(rep["tool"] == "dsv4kv run", "tool")
    m = re.match(r"dsv4kv (\S+)(?: \(commit ([0-9a-f]+)\))?", version_line)
    need(m, f"cannot read the version line {version_line!r}")
    need(rep["library_version"] == m.group(1),
         f"library_version {rep['library_version']} vs --version {m.group(1)}")
    need(rep["git_commit"] == m.group(2),
         f"git_commit {rep['git_commit']} vs --version {m.group(2)}")
    need(rep["host"] == socket.gethostname(), f"host {rep['host']}")
    need(isinstance(rep["command_line"], str) and "--json" in rep["command_line"]
         and rep["argv"][:2] == ["dsv4kv", "run"], "command_line / argv")
    th = rep["threads"]
    need(th["requested"] == 1 and th["large_calls"] == 1 and th["small_calls"] == 1
         and th["processors"] >= 1, f"threads {th}")
    need(rep["model"]["name"] == "deepseek-v4-flash" and rep["model"]["layers"] == 43,
         "model")
    need([k["layers"] for k in rep["model"]["kinds"]] == [2, 21, 20], "layers per kind")
    need(rep["passed"] is True and len(rep["runs"]) == 1, "passed / runs")
    run = rep["runs"][0]
    need(run["ran"] and run["passed"] and run["exit_status"] == 0, "run verdict")
    ver = run["verification"]
    need(ver["passed"] is True and ver["out_of_memory"] is False and ver["stopped"] is None,
         "verification passed / out_of_memory / stopped")
    lat = run["latency"]
    need(lat["clock"] == "virtual", "latency clock")
    check_dist(lat["queueing_delay_s"], "queueing_delay_s")
    check_dist(lat["ttft_s"], "ttft_s")
    need(lat["ttft_s"]["n"] == run["requests"]["done"], "ttft n")
    need(lat["ttft_s"]["p50"] > 0, "ttft p50 is 0")
    mb = run["model_bytes"]
    need(math.isclose(mb["bytes_per_token"], FLASH_BPT[("v4", "fp8")]), "bytes_per_token")
    need(math.isclose(mb["gib_per_million_tokens"], mb["bytes_per_token"] * 1e6 / 2**30),
         "gib_per_million_tokens")
    check_series(run)


def check_budget(rep, budget):
    for run in rep["runs"]:
        cfg, mb = run["config"], run["model_bytes"]
        need(cfg["pool_sized_by"] == "--kv-cache-memory", "pool_sized_by")
        need(cfg["kv_cache_memory_bytes"] == budget, "kv_cache_memory_bytes")
        need(cfg["num_blocks"] == budget // mb["page_bytes"],
             f"{run['format']}: {cfg['num_blocks']} pages, expected "
             f"{budget // mb['page_bytes']}")
        need(mb["pool_bytes"] <= budget < mb["pool_bytes"] + mb["page_bytes"],
             "the pool does not fill the budget")
        need(cfg["pages_with_memory"] <= cfg["num_blocks"], "pages_with_memory")


def check_formats(rep, formats):
    runs, cmp = rep["runs"], rep["comparison"]
    need([r["format"] for r in runs] == formats, "runs' formats")
    need([c["format"] for c in cmp] == formats, "comparison's formats")
    for r, c in zip(runs, cmp):
        key = (r["format"], r["indexer_format"])
        need(math.isclose(c["bytes_per_token"], FLASH_BPT[key]), f"{key} bytes/token")
        need(c["pages"] == r["config"]["num_blocks"] and c["passed"] == r["passed"],
             "comparison row vs run")
        for k in ("compressed_rel_rms", "indexer_rel_rms", "ttft_p99_s"):
            need(isinstance(c[k], float) and c[k] >= 0, f"comparison {k}")
    pages = [c["pages"] for c in cmp]
    need(pages == sorted(pages), f"smaller records did not get more pages: {pages}")


def main():
    what, path, arg = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(path) as f:
        rep = json.load(f)
    if what == "schema":
        check_schema(rep, arg)
    elif what == "budget":
        check_budget(rep, int(arg))
    elif what == "formats":
        check_formats(rep, arg.split(","))
    else:
        fail(f"unknown check {what}")
    print(f"check_json: {what} OK")


if __name__ == "__main__":
    main()
