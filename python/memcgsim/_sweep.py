"""Parameter sweeps: a scenario's ``[[sweep]]`` grid, every variant at every point with every
seed, run locally on threads or as Ray tasks, into one table with a row per run.

Both backends give the same table: the rows are put back in point order, and each run is
determined by the scenario and its seed. A Ray task needs only the scenario's text, so the
workers of a cluster need no shared files (they need the memcgsim package installed).

From the shell: ``python -m memcgsim.sweep FILE [--backend ray --address ADDR] [--out F]``
writes the table as CSV, as JSON (``columns``, ``rows``: what ``memcgsim sweep --backend
ray`` reads) for a name ending in .json, or as Parquet for one ending in .parquet (pyarrow).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from . import _memcgsim

__all__ = ["sweep", "main", "MAX_JOBS"]

#: The most threads the local backend takes.
MAX_JOBS = 1024


def _frame(table: Dict[str, Any]) -> Any:
    columns: List[str] = table["columns"]
    rows: List[List[Any]] = table["rows"]
    try:
        import pandas
    except ImportError:
        return [dict(zip(columns, r)) for r in rows]
    return pandas.DataFrame(rows, columns=columns)


def _ray_rows(text: str, name: str, n: int, address: Optional[str]) -> List[str]:
    try:
        import ray
    except ImportError as e:
        raise RuntimeError("the ray backend needs Ray: pip install ray") from e
    if not ray.is_initialized():
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)

    @ray.remote
    def run(index: int) -> str:
        from memcgsim import _memcgsim as native

        return native.sweep_row(text, name, index)

    # ray.get keeps the order of the references: the rows come back in point order.
    return ray.get([run.remote(i) for i in range(n)])


def _table(
    path: Union[str, "os.PathLike[str]"],
    backend: str,
    jobs: Optional[int],
    address: Optional[str],
) -> Dict[str, Any]:
    """The table as the native code makes it: ``{"columns": [...], "rows": [[...], ...]}``."""
    try:
        path = os.fspath(path)
    except TypeError:
        raise TypeError(
            f"path must be a str or os.PathLike, not {type(path).__name__}"
        ) from None
    if not isinstance(path, str):
        raise TypeError(f"path must be a str path, not {type(path).__name__}")
    if backend == "local":
        if jobs is None:
            n = len(os.sched_getaffinity(0))
        elif not isinstance(jobs, int) or isinstance(jobs, bool):
            raise TypeError(f"jobs must be an int, not {type(jobs).__name__}")
        elif not 1 <= jobs <= MAX_JOBS:
            raise ValueError(f"jobs must be from 1 to {MAX_JOBS}, not {jobs}")
        else:
            n = jobs
        return json.loads(_memcgsim.sweep_table(path, n))
    if backend == "ray":
        # A file that cannot be read raises its OSError (FileNotFoundError, ...).
        text = Path(path).read_text()
        points = _memcgsim.sweep_points(text, path)
        if not points:
            raise ValueError(f"{path}: the scenario has no [[sweep]]")
        rows = _ray_rows(text, path, len(points), address)
        return json.loads(_memcgsim.sweep_assemble(rows))
    raise ValueError(f"backend must be 'local' or 'ray', not {backend!r}")


def sweep(
    path: Union[str, "os.PathLike[str]"],
    backend: str = "local",
    jobs: Optional[int] = None,
    address: Optional[str] = None,
) -> Any:
    """Run the ``[[sweep]]`` of a scenario file (docs/SCENARIOS.md) and return its table.

    ``backend="local"`` runs on ``jobs`` threads of this process (default: the CPUs it may
    use); ``backend="ray"`` runs each point as a Ray task, on the cluster at ``address``
    (``ray.init(address=...)``; None starts a local instance unless Ray is already
    initialised). The table has a row per run (variant, the axes' values, seed, then the
    run's figures) and is a pandas DataFrame, or a list of dicts without pandas. A file
    that cannot be read (the scenario, a trace) raises the OSError of its errno
    (FileNotFoundError, ...); a scenario error, or ``jobs`` outside 1 to MAX_JOBS, raises
    ValueError; an argument of the wrong type TypeError."""
    return _frame(_table(path, backend, jobs, address))


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m memcgsim.sweep", description=__doc__.split("\n\n")[0])
    p.add_argument("scenario", help="a scenario file with [[sweep]] axes")
    p.add_argument("--backend", choices=["local", "ray"], default="local")
    p.add_argument("--address", help="the Ray cluster (ray.init's address)")
    p.add_argument("--jobs", "-j", type=int, help="threads of the local backend")
    p.add_argument(
        "--out", help="the table's file: .csv (default: sweep.csv), .json (columns, rows) or .parquet"
    )
    a = p.parse_args(argv)
    out = a.out or "sweep.csv"
    bad = _unwritable(out)
    if bad is not None:
        print(f"memcgsim: {out}: {bad.strerror}", file=sys.stderr)
        return 2
    try:
        raw = _table(a.scenario, a.backend, a.jobs, a.address)
    except OSError as e:
        print(f"memcgsim: {e.filename or a.scenario}: {e.strerror or e}", file=sys.stderr)
        return 2
    except (ValueError, RuntimeError) as e:
        print(f"memcgsim: {e}", file=sys.stderr)
        return 2
    try:
        return _write(raw, out)
    except OSError as e:
        print(f"memcgsim: {e.filename or out}: {e.strerror or e}", file=sys.stderr)
        return 2


def _unwritable(out: str) -> Optional[OSError]:
    """Why the table could not be written to ``out``, checked before the runs: its folder
    is missing, no folder, or not writable, or ``out`` is a folder; None when it can."""
    folder = os.path.dirname(out) or "."
    try:
        st = os.stat(folder)
    except OSError as e:
        return e
    if not stat.S_ISDIR(st.st_mode):
        return NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), folder)
    if os.path.isdir(out):
        return IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), out)
    if not os.access(folder, os.W_OK | os.X_OK):
        return PermissionError(errno.EACCES, os.strerror(errno.EACCES), folder)
    return None


def _write(raw: Dict[str, Any], out: str) -> int:
    """Write the table to ``out`` (CSV, JSON or Parquet by its name); 2 when it cannot."""
    if out.endswith(".json"):
        with open(out, "w") as f:
            json.dump(raw, f)
        print(f"memcgsim: {len(raw['rows'])} runs in {out}", file=sys.stderr)
        return 0
    table = _frame(raw)
    if isinstance(table, list):
        import csv

        if out.endswith(".parquet"):
            print("memcgsim: writing Parquet needs pandas and pyarrow", file=sys.stderr)
            return 2
        with open(out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(table[0]) if table else [])
            w.writeheader()
            w.writerows(table)
    elif out.endswith(".parquet"):
        table.to_parquet(out, index=False)
    else:
        table.to_csv(out, index=False)
    print(f"memcgsim: {len(table)} runs in {out}", file=sys.stderr)
    return 0
