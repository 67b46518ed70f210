"""The Python examples of examples/ run and make what they say."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_sweep_high_example(tmp_path):
    pytest.importorskip("pandas")
    if os.environ.get("MEMCGSIM_PYTHON") != "1":
        pytest.importorskip("matplotlib")
    png = tmp_path / "high.png"
    r = subprocess.run(
        [sys.executable, str(ROOT / "examples/sweep_high.py"), str(png)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "high_mib" in r.stdout and "task.ws.elapsed_s" in lines[0]
    assert any(l.split()[:1] == ["100"] for l in lines) and any(l.split()[:1] == ["250"] for l in lines)
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"
