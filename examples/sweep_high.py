"""memory.high swept over a 200M working set (examples/sweep-high.toml): what each limit
costs the service in run time and memory stall, averaged over the seeds, as a table and,
with matplotlib, a chart.

    pip install '.[pandas]' matplotlib
    python3 examples/sweep_high.py [OUT.png] [--backend ray]
"""

import sys
from pathlib import Path

import memcgsim

HERE = Path(__file__).resolve().parent


def main(argv):
    backend = "ray" if "--backend" in argv and argv[argv.index("--backend") + 1] == "ray" else "local"
    names = [a for a in argv if a.endswith(".png")]
    out = Path(names[0]) if names else Path("sweep-high.png")

    t = memcgsim.sweep(HERE / "sweep-high.toml", backend=backend)
    t["high_mib"] = t["high"].str.rstrip("M").astype(int)
    mean = t.groupby("high_mib")[["task.ws.elapsed_s", "cgroup./A.memory_some_s", "task.ws.majflt"]].mean()
    print(mean.to_string())

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: no chart)")
        return 0
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(mean.index, mean["task.ws.elapsed_s"], marker="o", label="run time (s)")
    ax.plot(mean.index, mean["cgroup./A.memory_some_s"], marker="s", label="memory stall, some (s)")
    ax.axvline(200, color="grey", linestyle=":", label="working set (200M)")
    ax.set_xlabel("memory.high (MiB)")
    ax.set_ylabel("seconds of virtual time")
    ax.set_title("memory.high over a 200M working set")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out)
    print(f"chart: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
