#!/usr/bin/env python3
"""Summaries of the Nsight Compute CSV files scripts/gpu-profile.sh writes.

  ncu_summary.py durations FILE   kernel, grid, block, registers, duration (us)
                                  of each launch in a `--csv --page raw` file
  ncu_summary.py stalls FILE [N]  for the launch with the most warps in a
                                  `--page source --print-source sass --csv`
                                  file: stall-sample totals by reason, then
                                  the N (default 12) SASS instructions with
                                  the most samples and their main reasons
"""
import csv
import sys


def num(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def durations(path):
    # ncu's CSV lines are quoted; the profiled program's own output is mixed in
    rows = list(csv.reader(l for l in open(path) if l.startswith('"')))
    head, units, data = rows[0], rows[1], rows[2:]
    col = {name: i for i, name in enumerate(head)}
    scale = {"ns": 1e-3, "us": 1.0, "usecond": 1.0, "msecond": 1e3, "ms": 1e3}
    unit = scale.get(units[col["gpu__time_duration.sum"]], 1e-3)
    print(f"{'kernel':40s} {'grid':>8s} {'block':>6s} {'regs':>5s} {'us':>10s}")
    for r in data:
        name = r[col["Kernel Name"]].split("(")[0]
        us = num(r[col["gpu__time_duration.sum"]]) * unit
        print(f"{name:40s} {r[col['launch__grid_size']]:>8s} {r[col['launch__block_size']]:>6s} "
              f"{r[col['launch__registers_per_thread']]:>5s} {us:10.3f}")


def launches(path):
    out, cur = [], None
    for r in csv.reader(l for l in open(path) if l.startswith('"')):
        if not r:
            continue
        if r[0] == "Kernel Name":
            cur = {"kernel": r[1], "head": None, "rows": []}
            out.append(cur)
        elif cur is not None and r[0] == "Address":
            cur["head"] = r
        elif cur is not None and cur["head"] is not None:
            cur["rows"].append(r)
    return [l for l in out if l["rows"]]


def stalls(path, n):
    ls = launches(path)
    if not ls:
        print(f"{path}: no launches")
        return

    def warps(l):
        return num(l["rows"][0][l["head"].index("Instructions Executed")])

    l = max(ls, key=warps)
    h, rows = l["head"], l["rows"]
    samples = h.index("Warp Stall Sampling (All Samples)")
    reasons = [i for i, c in enumerate(h) if c.startswith("stall_") and "Not Issued" not in c]
    total = sum(num(r[samples]) for r in rows)
    print(f"{l['kernel'].split('(')[0]}: {int(warps(l))} warps, {int(total)} stall samples")
    sums = sorted(((sum(num(r[i]) for r in rows), h[i]) for i in reasons), reverse=True)
    print("  by reason: " + ", ".join(f"{name[6:]} {int(v)}" for v, name in sums if v > 0))
    for r in sorted(rows, key=lambda r: -num(r[samples]))[:n]:
        top = sorted(((num(r[i]), h[i][6:]) for i in reasons), reverse=True)[:2]
        why = ", ".join(f"{name} {int(v)}" for v, name in top if v > 0)
        print(f"  {int(num(r[samples])):6d}  {r[1].strip()[:60]:60s} {why}")


def main(argv):
    if len(argv) >= 3 and argv[1] == "durations":
        durations(argv[2])
    elif len(argv) >= 3 and argv[1] == "stalls":
        stalls(argv[2], int(argv[3]) if len(argv) > 3 else 12)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
