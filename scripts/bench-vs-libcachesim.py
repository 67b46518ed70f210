#!/usr/bin/env python3
"""Trace replay: memcgsim beside libCacheSim on the same trace and cache size.

memcgsim's `bench --only trace` writes a Zipf trace (libCacheSim's oracleGeneral format) and
replays it as page-cache reads in a group whose memory.max holds 200,000 pages. This script
then replays the same file with libCacheSim's Python bindings (LRU, Clock and S3-FIFO with a
cache of 200,000 four-KiB objects), alternating the tools run by run, and prints each one's
requests per second and miss ratio, and memcgsim's speed as a multiple of libCacheSim LRU's
(the median of the per-pair ratios).

    pip install libcachesim          # optional: without it only memcgsim's figure is shown
    cargo build --release
    scripts/bench-vs-libcachesim.py [--scale 10] [--runs 3] [--memcgsim PATH] [--baseline PATH]
                                    [--mglru]

--scale 10 is 20 million requests. Wall-clock figures depend on the machine and its load:
compare the ratios, measured here in one run, not figures from different runs.
--baseline PATH replays the trace with a second memcgsim binary too (an earlier build),
alternating with the others, and prints its figures and the speed-up of --memcgsim over it;
the two must report the same miss ratio. --mglru replays it with memcgsim's
multi-generational LRU as well (`bench --lru mglru`), alternating with the rest, and
prints its figures and its speed against the two-list LRU's.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

CACHE_PAGES = 200_000
PAGE = 4096
FIGURE = re.compile(r"([0-9.]+) M requests/s, miss ratio ([0-9.]+)")


def memcgsim_replay(binary, args):
    """Run memcgsim's trace bench; returns (requests per second, miss ratio)."""
    out = subprocess.run(
        [binary, "bench", "--only", "trace"] + args,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    m = FIGURE.search(out)
    if not m:
        sys.exit(f"no trace figure in memcgsim's output:\n{out}")
    return float(m.group(1)) * 1e6, float(m.group(2))


def libcachesim_replay(lcs, algorithm, path):
    """Replay the trace with one libCacheSim algorithm; returns (requests/s, miss ratio)."""
    reader = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE)
    cache = getattr(lcs, algorithm)(cache_size=CACHE_PAGES * PAGE)
    requests = os.path.getsize(path) // 24
    t0 = time.perf_counter()
    miss_ratio, _byte_miss_ratio = cache.process_trace(reader)
    secs = time.perf_counter() - t0
    return requests / secs, miss_ratio


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", type=int, default=10, help="2 million requests per unit")
    p.add_argument("--runs", type=int, default=3, help="runs of each tool (alternating)")
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument(
        "--memcgsim",
        default=os.path.join(here, "..", "target", "release", "memcgsim"),
        help="the memcgsim binary (default: target/release/memcgsim)",
    )
    p.add_argument("--baseline", help="an earlier memcgsim binary to compare with")
    p.add_argument("--mglru", action="store_true",
                   help="also replay with memcgsim's multi-generational LRU (--lru mglru)")
    a = p.parse_args()
    if a.scale < 1 or a.runs < 1:
        sys.exit("--scale and --runs must be at least 1")
    for b in [a.memcgsim] + ([a.baseline] if a.baseline else []):
        if not os.access(b, os.X_OK):
            sys.exit(f"{b}: not found; build it with cargo build --release")
    try:
        import libcachesim as lcs
    except ImportError:
        lcs = None

    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "zipf.oracleGeneral")
        ours = [memcgsim_replay(a.memcgsim, ["--scale", str(a.scale), "--trace-out", trace])]
        requests = os.path.getsize(trace) // 24
        print(f"trace: {requests} requests, Zipf 0.8 over 1,000,000 one-page objects; "
              f"cache {CACHE_PAGES} pages")
        algorithms = ["LRU", "Clock", "S3FIFO"]
        theirs = {alg: [] for alg in algorithms}
        base = []
        gen = []
        for run in range(a.runs):
            if run > 0:
                ours.append(memcgsim_replay(a.memcgsim, ["--trace", trace]))
            if a.mglru:
                gen.append(memcgsim_replay(a.memcgsim, ["--trace", trace, "--lru", "mglru"]))
            if a.baseline:
                base.append(memcgsim_replay(a.baseline, ["--trace", trace]))
            if lcs is not None:
                for alg in algorithms:
                    theirs[alg].append(libcachesim_replay(lcs, alg, trace))

    def line(name, runs):
        rates = [r for r, _ in runs]
        print(f"  {name:<22} {statistics.median(rates) / 1e6:6.2f} M requests/s "
              f"(min {min(rates) / 1e6:.2f}, max {max(rates) / 1e6:.2f}), "
              f"miss ratio {runs[0][1]:.4f}")

    line("memcgsim", ours)
    if a.mglru:
        line("memcgsim, MGLRU", gen)
        ratio = [g[0] / o[0] for g, o in zip(gen, ours)]
        print(f"memcgsim MGLRU / two-list LRU: {statistics.median(ratio):.2f}x "
              f"(median of {len(ratio)} pairs; min {min(ratio):.2f}, max {max(ratio):.2f})")
    if a.baseline:
        line("memcgsim (baseline)", base)
        speedup = [o[0] / b[0] for o, b in zip(ours, base)]
        print(f"memcgsim / baseline: {statistics.median(speedup):.2f}x "
              f"(median of {len(speedup)} pairs; min {min(speedup):.2f}, "
              f"max {max(speedup):.2f})")
        if base[0][1] != ours[0][1]:
            sys.exit(f"the miss ratios differ: {ours[0][1]} against {base[0][1]}")
    if lcs is None:
        print("libcachesim is not installed (pip install libcachesim): no comparison")
        return
    for alg in algorithms:
        line(f"libCacheSim {alg}", theirs[alg])
    others = ([("memcgsim MGLRU", gen)] if a.mglru else []) + (
        [("baseline", base)] if a.baseline else [])
    for name, runs in [("memcgsim", ours)] + others:
        pairs = [o[0] / t[0] for o, t in zip(runs, theirs["LRU"])]
        print(f"{name} / libCacheSim LRU: {statistics.median(pairs):.2f}x "
              f"(median of {len(pairs)} pairs; min {min(pairs):.2f}, max {max(pairs):.2f})")


if __name__ == "__main__":
    main()
