"""memcgsim.sweep: a scenario's [[sweep]] grid into one table, locally and on Ray."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from memcgsim import sweep

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "examples/sweep-high.toml"


def test_local_sweep_table():
    pandas = pytest.importorskip("pandas")
    t = sweep(SWEEP, jobs=2)
    assert isinstance(t, pandas.DataFrame)
    assert len(t) == 7 * 2
    assert list(t.columns[:3]) == ["variant", "high", "seed"]
    assert (t["task.ws.outcome"] == "exit 0").all()
    # Below the 200M working set, memory.high costs time and swap-ins; at 225M and above
    # the working set fits and the numbers stop changing.
    by = t[t.seed == 1].set_index("high")
    assert by.loc["100M", "task.ws.elapsed_s"] > by.loc["175M", "task.ws.elapsed_s"] > by.loc[
        "225M", "task.ws.elapsed_s"
    ]
    assert by.loc["225M", "task.ws.majflt"] == 0 and by.loc["100M", "task.ws.majflt"] > 10000
    assert by.loc["225M", "task.ws.elapsed_s"] == by.loc["250M", "task.ws.elapsed_s"]
    # The threads do not change the table.
    assert sweep(SWEEP, jobs=1).equals(t)


def test_sweep_errors():
    with pytest.raises(ValueError, match="no \\[\\[sweep\\]\\]"):
        sweep(ROOT / "experiments/seed002/streaming/small.toml", backend="ray")
    with pytest.raises(FileNotFoundError, match="no-such.toml"):
        sweep("no-such.toml")
    with pytest.raises(ValueError, match="backend"):
        sweep(SWEEP, backend="spark")
    with pytest.raises(ValueError, match="jobs"):
        sweep(SWEEP, jobs=0)


def test_ray_backend_gives_the_local_table(tmp_path):
    # Required where the Python tests must run (MEMCGSIM_PYTHON=1: CI); skipped elsewhere
    # when Ray is not installed.
    if os.environ.get("MEMCGSIM_PYTHON") == "1":
        import ray
    else:
        ray = pytest.importorskip("ray")
    pytest.importorskip("pandas")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = sweep(SWEEP, backend="ray")
    finally:
        ray.shutdown()
    local = sweep(SWEEP, backend="local", jobs=2)
    assert on_ray.equals(local)


def test_command_line_writes_csv(tmp_path):
    out = tmp_path / "t.csv"
    from memcgsim.sweep import main

    assert main([str(SWEEP), "--out", str(out), "--jobs", "2"]) == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 15 and lines[0].startswith("variant,high,seed,")
    assert main(["no-such.toml"]) == 2


def test_python_m_memcgsim_sweep_runs_without_warnings(tmp_path):
    # Every warning an error: `python -m memcgsim.sweep` must not run a module the package
    # has already imported (RuntimeWarning "found in sys.modules").
    out = tmp_path / "t.csv"
    r = subprocess.run(
        [sys.executable, "-W", "error", "-m", "memcgsim.sweep", str(SWEEP), "--out", str(out), "--jobs", "2"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "Warning" not in r.stderr
    assert r.stderr.splitlines()[-1] == f"memcgsim: 14 runs in {out}"


def test_memcgsim_sweep_backend_ray_writes_the_local_files(tmp_path):
    # `memcgsim sweep --backend ray` hands the runs to this package on Ray; its files must be
    # the local backend's, byte for byte. The binary comes from tests/python.rs.
    binary = os.environ.get("MEMCGSIM_BIN")
    if not binary:
        pytest.skip("MEMCGSIM_BIN is not set (tests/python.rs sets it)")
    if os.environ.get("MEMCGSIM_PYTHON") != "1":
        pytest.importorskip("ray")
    env = dict(os.environ, PYTHON=sys.executable)
    out = {}
    for backend in ["local", "ray"]:
        d = tmp_path / backend
        r = subprocess.run(
            [binary, "sweep", str(SWEEP), "--backend", backend, "--out", str(d), "--no-progress"],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("sweep sweep-high: 14 runs: 1 variant x high (7 values) x 2 seeds;")
        out[backend] = ((d / "sweep.csv").read_bytes(), (d / "sweep.json").read_bytes())
    assert out["ray"] == out["local"]
    r = subprocess.run(
        [binary, "sweep", str(SWEEP), "--address", "x"], capture_output=True, text=True, env=env
    )
    assert r.returncode == 2 and "--address is for --backend ray" in r.stderr


def test_ray_sweeps_a_controller_setting_as_locally(tmp_path):
    # experiments/tmo/frontier/small.toml: Senpai's target (a controller axis) over zswap's
    # pool limit (a machine axis).
    if os.environ.get("MEMCGSIM_PYTHON") == "1":
        import ray
    else:
        ray = pytest.importorskip("ray")
    pytest.importorskip("pandas")
    small = ROOT / "experiments/tmo/frontier/small.toml"
    local = sweep(small, backend="local", jobs=2)
    assert list(local.columns[:4]) == ["variant", "pressure", "pool", "seed"]
    by = local.set_index(["pressure", "pool"])
    for pool in ["2", "25"]:
        assert by.loc[("100ms", pool), "cgroup./web.usage_avg"] < by.loc[("3ms", pool), "cgroup./web.usage_avg"]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = sweep(small, backend="ray")
    finally:
        ray.shutdown()
    assert on_ray.equals(local)
