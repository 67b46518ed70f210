"""memcgsim.run_scenario: a scenario file's run, its summary and its time series."""

from pathlib import Path

import pytest

from memcgsim import run_scenario

ROOT = Path(__file__).resolve().parents[2]
STREAMING = ROOT / "experiments/seed002/streaming/small.toml"


def test_summary_and_series():
    run = run_scenario(STREAMING, variant="split")
    s = run.summary
    assert s["variant"] == "split" and s["seed"] == 1
    ws = next(t for t in s["tasks"] if t["task"] == "ws")
    assert ws["outcome"] == "exit 0" and ws["majflt"] == 0
    unified = run_scenario(STREAMING, variant="unified").summary
    assert next(t for t in unified["tasks"] if t["task"] == "ws")["majflt"] > 1000

    series = run.series
    pandas = pytest.importorskip("pandas")
    assert isinstance(series, pandas.DataFrame)
    assert list(series.columns) == ["time_s", "cgroup", "key", "value"]
    used = series[(series.cgroup == "machine") & (series.key == "used")]
    assert len(used) >= 5 and used.value.max() > 0
    # The same run, the same numbers.
    again = run_scenario(STREAMING, variant="split")
    assert again.summary == s and again.series.equals(series)


def test_series_without_pandas(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_pandas(name, *a, **k):
        if name == "pandas":
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    run = run_scenario(STREAMING, variant="split")
    assert isinstance(run.series, list)
    assert set(run.series[0]) == {"time_s", "cgroup", "key", "value"}


def test_scenario_errors_name_the_file():
    with pytest.raises(FileNotFoundError, match="no-such-file.toml"):
        run_scenario("no-such-file.toml")
    with pytest.raises(ValueError, match="nosuch"):
        run_scenario(STREAMING, variant="nosuch")
