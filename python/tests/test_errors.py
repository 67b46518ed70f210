"""Errors as Python names them: OSError subclasses with their errno for files (scenarios,
traces, output folders), TypeError for a value of the wrong type, ValueError with the
allowed range for a number out of it, and a task that could not start saying why."""

import errno
import math
import subprocess
import sys
from pathlib import Path

import pytest

from memcgsim import MAX_DURATION_S, MAX_SEED, Machine, run_scenario, sweep
from memcgsim.sweep import MAX_JOBS

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "examples/sweep-high.toml"

TRACE_SCENARIO = """
name = "trace"
[machine]
memory = "256M"
[[cgroup]]
path = "/A"
[[task]]
name = "replay"
cgroup = "/A"
workload = "trace"
args = ["{trace}", "--region", "16M"]
[run]
duration = "10s"
sample = "1s"
seeds = [1]
"""


def test_missing_scenario_is_file_not_found():
    with pytest.raises(FileNotFoundError) as e:
        run_scenario("/nonexistent.toml")
    assert e.value.errno == errno.ENOENT
    assert e.value.filename == "/nonexistent.toml"
    assert e.value.strerror == "No such file or directory"
    with pytest.raises(FileNotFoundError) as e:
        sweep("/nonexistent.toml")
    assert e.value.errno == errno.ENOENT and e.value.filename == "/nonexistent.toml"
    with pytest.raises(FileNotFoundError):
        sweep("/nonexistent.toml", backend="ray")


def test_a_folder_as_scenario_is_a_directory_error(tmp_path):
    with pytest.raises(IsADirectoryError) as e:
        run_scenario(tmp_path)
    assert e.value.errno == errno.EISDIR and e.value.filename == str(tmp_path)
    with pytest.raises(IsADirectoryError):
        sweep(tmp_path)


def test_missing_trace_is_file_not_found(tmp_path):
    trace = tmp_path / "missing.csv"
    scenario = tmp_path / "t.toml"
    scenario.write_text(TRACE_SCENARIO.format(trace=trace))
    with pytest.raises(FileNotFoundError) as e:
        run_scenario(scenario)
    assert e.value.errno == errno.ENOENT
    assert str(trace) in e.value.strerror
    # With the trace in place, the same scenario runs.
    trace.write_text("0,1,4096\n1,2,4096\n")
    assert run_scenario(scenario).summary["tasks"][0]["outcome"] == "exit 0"


def test_scenario_mistakes_stay_value_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[machine]\nmemory = "lots"\n')
    with pytest.raises(ValueError, match="bad.toml"):
        run_scenario(bad)


def test_group_names_follow_the_kernel():
    m = Machine(memory="256M")
    with pytest.raises(OSError) as e:
        m.mkdir("/" + "a" * 4096)
    assert e.value.errno == errno.ENAMETOOLONG
    assert e.value.strerror == "File name too long"
    m.mkdir("/" + "a" * 300)
    with pytest.raises(OSError) as e:
        m.mkdir("/a\0b")
    assert e.value.errno == errno.EINVAL
    with pytest.raises(FileNotFoundError) as e:
        m.mkdir("/proc/foo")
    assert e.value.errno == errno.ENOENT
    with pytest.raises(FileExistsError):
        m.mkdir("/proc/meminfo")


def test_wrong_types_are_type_errors():
    m = Machine(memory="256M")
    m.mkdir("/A")
    for value in (None, 1.5, True, b"10M", ["10M"]):
        with pytest.raises(TypeError, match="str or an int"):
            m.write("/A/memory.max", value)
    # A str and an int are written as they are; the kernel's answer stays an OSError.
    m.write("/A/memory.max", 10 << 20)
    m.write("/A/memory.max", "20M")
    assert m.read("/A/memory.max") == f"{20 << 20}\n"
    with pytest.raises(OSError) as e:
        m.write("/A/memory.max", "bogus")
    assert e.value.errno == errno.EINVAL
    with pytest.raises(TypeError, match="duration"):
        m.sleep(None)
    with pytest.raises(TypeError, match="duration"):
        m.sleep(True)
    with pytest.raises(TypeError):
        run_scenario(None)
    with pytest.raises(TypeError):
        run_scenario(SWEEP, variant=3)
    with pytest.raises(TypeError):
        run_scenario(SWEEP, seed="1")
    with pytest.raises(TypeError):
        sweep(42)
    with pytest.raises(TypeError, match="jobs"):
        sweep(SWEEP, jobs="2")
    with pytest.raises(TypeError, match="machine setting memory"):
        Machine(memory=object())
    with pytest.raises(TypeError, match="oom_score_adj"):
        m.run("/A", "anon", "1M", oom_score_adj="5")


def test_numbers_out_of_range_name_the_range():
    with pytest.raises(ValueError, match=f"seed must be from 0 to {MAX_SEED}, not -1"):
        Machine(seed=-1)
    with pytest.raises(ValueError, match=f"from 0 to {MAX_SEED}, not {2**64}"):
        Machine(seed=2**64)
    with pytest.raises(ValueError, match="cpus: expected a whole number from 1 to 1024, got '0'"):
        Machine(cpus=0)
    with pytest.raises(ValueError, match="from 1 to 1024, got '4294967297'"):
        Machine(cpus=2**32 + 1)
    with pytest.raises(ValueError, match="swappiness: expected a whole number from 0 to 200"):
        Machine(swappiness=201)
    m = Machine(memory="256M")
    for bad in (float("inf"), float("-inf"), float("nan"), -1, -0.5, MAX_DURATION_S + 1, 10**30):
        with pytest.raises(ValueError, match=f"outside 0 to {MAX_DURATION_S} seconds"):
            m.sleep(bad)
    with pytest.raises(ValueError, match="at most 1000000000s"):
        m.sleep("99999999999s")
    before = m.now
    m.sleep(0)
    assert m.now == before
    with pytest.raises(ValueError, match="oom_score_adj must be from -1000 to 1000, not 1001"):
        m.run("/", "anon", "1M", oom_score_adj=1001)
    with pytest.raises(ValueError, match=f"seed must be from 0 to {MAX_SEED}, not -1"):
        run_scenario(SWEEP, seed=-1)
    with pytest.raises(ValueError, match=f"jobs must be from 1 to {MAX_JOBS}, not 0"):
        sweep(SWEEP, jobs=0)
    with pytest.raises(ValueError, match=f"jobs must be from 1 to {MAX_JOBS}"):
        sweep(SWEEP, jobs=2**70)
    assert math.isfinite(m.now)


def test_a_task_refused_by_the_overcommit_check_says_why():
    m = Machine(memory="1G", swap="0")
    end = m.run("/", "anon", "3G")
    assert end.status == 1 and not end.killed
    assert end.error.startswith("cannot allocate 3.0G: more than RAM + swap (")
    assert end.error.endswith("under vm.overcommit_memory=0 (mmap: ENOMEM)")
    assert m.run("/", "anon", "10M").error is None
    r = m.script("run / anon 3G\nexpect exit 0\n")
    assert r.status == 1
    assert "anon: cannot allocate 3.0G" in r.errors
    assert "exited with status 1: cannot allocate 3.0G" in r.errors


def test_long_tokens_are_cut_in_errors():
    m = Machine(memory="256M")
    big = "x" * (10 << 20)
    with pytest.raises(ValueError) as e:
        m.run("/", big)
    assert len(str(e.value)) < 600 and "(10485760 bytes)" in str(e.value)
    with pytest.raises(ValueError) as e:
        Machine(memory=big)
    assert len(str(e.value)) < 600
    r = m.script(f"{big}\n")
    assert r.status == 2 and len(r.errors) < 600


def test_sweep_command_checks_its_output_before_it_runs(tmp_path):
    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "memcgsim.sweep", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )

    missing = tmp_path / "no-such-folder" / "t.csv"
    def last_line(r):
        return r.stderr.splitlines()[-1]

    r = cli(str(SWEEP), "--out", str(missing))
    assert r.returncode == 2
    assert last_line(r) == f"memcgsim: {missing}: No such file or directory"
    r = cli(str(SWEEP), "--out", str(tmp_path))
    assert r.returncode == 2 and last_line(r) == f"memcgsim: {tmp_path}: Is a directory"
    r = cli("/nonexistent.toml")
    assert r.returncode == 2
    assert last_line(r) == "memcgsim: /nonexistent.toml: No such file or directory"
