#!/usr/bin/env python3
"""Simulated seconds per wall second of every experiment's variants.

Runs each variant of each scenario file (one seed, the scenario's first) with
`memcgsim run`, one after the other, and prints the simulated time (summary.json's
end_ns), the wall time and CPU time of the run, and their ratio. The runs write into a
temporary folder that is removed afterwards.

    scripts/sim-rate.py [--memcgsim target/release/memcgsim] [--baseline OLD] [--runs 3] [FILE.toml ...]

Without files it measures every experiment's full-size scenario files (not small.toml).
With --runs N each variant runs N times and the median wall time is kept. With --baseline,
each run of the measured build is paired with a run of the OLD build, alternating, and
the table adds the old build's rate and the ratio of the medians' wall times (old / new);
the two builds must simulate the same time.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def scenario_files():
    files = sorted((ROOT / "experiments").glob("**/*.toml"))
    return [f for f in files if f.name != "small.toml"]


def variants(path):
    with open(path, "rb") as f:
        doc = tomllib.load(f)
    names = [v["name"] for v in doc.get("variant", [])]
    return names or [None]


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_once(binary, path, variant, out):
    cmd = [binary, "run", str(path), "--no-progress", "--out", out]
    if variant is not None:
        cmd += ["--variant", variant]
    cpu0 = child_cpu()
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    cpu = child_cpu() - cpu0
    with open(os.path.join(out, "summary.json")) as f:
        end_ns = json.load(f)["end_ns"]
    return end_ns / 1e9, wall, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memcgsim", default=str(ROOT / "target/release/memcgsim"))
    ap.add_argument("--baseline", help="an earlier memcgsim build to run alternately")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    files = [Path(f) for f in args.files] or scenario_files()
    if args.baseline:
        print("| experiment | variant | simulated | wall, old | wall | simulated / wall, old | simulated / wall | speed-up |")
        print("|---|---|---|---|---|---|---|---|")
    else:
        print("| experiment | variant | simulated | wall | CPU | simulated / wall |")
        print("|---|---|---|---|---|---|")
    worst = None
    with tempfile.TemporaryDirectory(prefix="sim-rate-") as tmp:
        for path in files:
            rel = path.resolve().relative_to(ROOT / "experiments") if path.resolve().is_relative_to(ROOT / "experiments") else path
            for v in variants(path):
                samples, old = [], []
                for i in range(args.runs):
                    out = os.path.join(tmp, f"r{i}")
                    if args.baseline:
                        old.append(run_once(args.baseline, path, v, out + "-old"))
                    samples.append(run_once(args.memcgsim, path, v, out))
                sim = samples[0][0]
                wall = statistics.median(s[1] for s in samples)
                cpu = statistics.median(s[2] for s in samples)
                rate = sim / wall if wall > 0 else float("inf")
                if worst is None or rate < worst[0]:
                    worst = (rate, rel, v)
                if args.baseline:
                    if old[0][0] != sim:
                        print(f"{rel} {v}: the builds simulate {old[0][0]} s and {sim} s", file=sys.stderr)
                        return 1
                    wall_old = statistics.median(s[1] for s in old)
                    rate_old = sim / wall_old if wall_old > 0 else float("inf")
                    print(
                        f"| {rel} | {v or 'base'} | {sim:.1f} s | {wall_old:.2f} s | {wall:.2f} s "
                        f"| {rate_old:.0f} | {rate:.0f} | {wall_old / wall:.2f}x |",
                        flush=True,
                    )
                else:
                    print(f"| {rel} | {v or 'base'} | {sim:.1f} s | {wall:.2f} s | {cpu:.2f} s | {rate:.0f} |", flush=True)
    if worst:
        print(f"lowest: {worst[0]:.0f} simulated seconds per wall second ({worst[1]} {worst[2] or 'base'})")


if __name__ == "__main__":
    sys.exit(main())
