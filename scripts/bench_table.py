#!/usr/bin/env python3
"""The markdown table of bench/results/h200.md from `dsv4kv bench --device cuda`
JSON: bench.json, and optionally the same run's --report JSON for the last column.

    scripts/bench_table.py bench.json [bench-report.json]
"""
import json
import sys


def fmt(v, nd=1):
    return "-" if v is None else f"{v:.{nd}f}"


def main():
    rows = json.load(open(sys.argv[1]))
    rep = {}
    if len(sys.argv) > 2:
        for r in json.load(open(sys.argv[2]))["results"]:
            rep[r["config"]] = r.get("graph_us")
    print("| config | MB | eager us | host us | graph us | % copy, eager | % copy, graph | ref event us "
          "| ref graph us | x event | x graph | graph us with a report |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows.get("floor", []) + rows["results"]:
        floor = r["op"] == "floor"
        print("| " + " | ".join([
            r["config"], "-" if floor else f"{r['bytes'] / 1e6:.2f}", fmt(r["eager_us"]), fmt(r["host_us"]),
            "-" if floor and not r.get("calls_per_graph") else fmt(r["graph_us"]),
            "-" if floor else fmt(r["pct_copy_eager"]), "-" if floor else fmt(r["pct_copy_graph"]),
            fmt(r.get("ref_event_us")), fmt(r.get("ref_graph_us")), fmt(r.get("speedup_eager"), 2),
            fmt(r.get("speedup_graph"), 2), "-" if floor else fmt(rep.get(r["config"]))]) + " |")


if __name__ == "__main__":
    main()
