"""memcgsim.Machine: the model driven through its cgroup files from Python."""

import errno

import pytest

from memcgsim import Machine, TaskEnd


def keyed(text):
    """A flat-keyed file (memory.events, memory.stat) as a dict of ints."""
    return {k: int(v) for k, v in (line.split() for line in text.splitlines())}


def test_oom_events():
    # test_memcg_oom_events (tools/testing/selftests/cgroup/test_memcontrol.c): 100M of
    # anonymous memory under memory.max = 30M and no swap is OOM-killed, once.
    m = Machine(memory="1G", swap="0", cpus=2)
    m.mkdir("/memcg_test")
    m.write("/memcg_test/memory.max", "30M")
    m.write("/memcg_test/memory.swap.max", 0)
    end = m.run("/memcg_test", "anon", "100M")
    assert isinstance(end, TaskEnd)
    assert end.killed and end.status == 137 and end.oom == "/memcg_test"
    assert m.read("/memcg_test/cgroup.procs") == ""
    events = keyed(m.read("/memcg_test/memory.events"))
    assert events["oom"] == 1 and events["oom_kill"] == 1
    assert m.read("/memcg_test/memory.max") == "31457280\n"


def test_writes_raise_the_kernels_errno():
    m = Machine(memory="512M")
    m.mkdir("/A")
    with pytest.raises(OSError) as e:
        m.write("/A/memory.max", "30X")
    assert e.value.errno == errno.EINVAL and e.value.filename == "/A/memory.max"
    with pytest.raises(FileExistsError):
        m.mkdir("/A")
    with pytest.raises(FileNotFoundError):
        m.read("/B/memory.current")
    with pytest.raises(OSError) as e:
        m.write("/A/memory.high", "x" * 5000)
    assert e.value.errno == errno.E2BIG
    m.run("/A", "anon", "8M", "--hold", background=True, name="holder")
    with pytest.raises(OSError) as e:
        m.rmdir("/A")
    assert e.value.errno == errno.EBUSY
    assert "memory.max" in m.listdir("/A")


def test_background_tasks_sleep_wait_and_kill():
    m = Machine(memory="1G", cpus=2)
    m.mkdir("/A")
    assert m.run("/A", "anon", "64M", "--hold", background=True, name="hog") is None
    end = m.wait("hog")
    assert end.holding and end.status is None
    assert int(m.read("/A/memory.current")) >= 64 << 20
    t = m.now
    m.sleep("250ms")
    assert m.now == pytest.approx(t + 0.25)
    m.sleep(1)
    assert m.now == pytest.approx(t + 1.25)
    m.kill("hog")
    assert m.read("/A/cgroup.procs") == ""
    with pytest.raises(OSError) as e:
        m.kill("hog")
    assert e.value.errno == errno.ESRCH


def test_bad_input_raises_and_does_not_crash():
    with pytest.raises(ValueError, match="bogus"):
        Machine(bogus=1)
    with pytest.raises(ValueError):
        Machine(memory="lots")
    m = Machine()
    m.mkdir("/A")
    with pytest.raises(ValueError, match="nosuch"):
        m.run("/A", "nosuch")
    with pytest.raises(ValueError):
        m.run("/A", "anon", "--passes")
    with pytest.raises(ValueError):
        m.sleep("soon")
    with pytest.raises(ValueError):
        m.wait("nobody")
    with pytest.raises(OSError) as e:
        m.run("/nowhere", "anon", "1M")
    assert e.value.errno == errno.ENOENT


def test_script_runs_on_the_same_machine():
    m = Machine(memory="1G")
    m.mkdir("/A")
    m.write("/A/memory.high", "20M")
    r = m.script(
        "expect /A/memory.high == 20M\n"
        "run /A anon 50M\n"
        "expect exit 0\n"
        "cat /A/memory.high\n"
        "expect /A/memory.events:high > 0\n"
        "expect /A/memory.current > 100M\n"
    )
    assert r.status == 1 and r.expect_failures == 1
    assert r.output == "20971520\n"
    assert "expect failed" in r.errors
    assert keyed(m.read("/A/memory.events"))["high"] > 0
    assert m.script("machine memory=1G\n").status == 2


def test_same_seed_same_numbers():
    def stat(seed):
        m = Machine(memory="256M", swap="256M", seed=seed)
        m.mkdir("/A")
        m.write("/A/memory.max", "64M")
        m.run("/A", "usemem", "128M", "--random", "--passes", "2")
        return m.read("/A/memory.stat"), m.now

    assert stat(7) == stat(7)
