"""memcgsim from Python: a deterministic model of the Linux memory cgroup controller.

A :class:`Machine` is a simulated Linux machine driven through its cgroup files, as a shell
drives a real one::

    from memcgsim import Machine
    m = Machine(memory="1G", swap="1G", cpus=2)
    m.mkdir("/A")
    m.write("/A/memory.max", "30M")
    end = m.run("/A", "anon", "100M")        # killed by the OOM killer
    print(end.killed, m.read("/A/memory.events"))

:func:`run_scenario` runs a scenario file (docs/SCENARIOS.md) and returns its summary and
its time series; :func:`sweep` runs its ``[[sweep]]`` grid, locally or on Ray, into a table. Every run is determined by its inputs and seed. See docs/PYTHON.md.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any, Dict, List, NamedTuple, Optional, Union

from . import _memcgsim
from ._sweep import sweep

__all__ = [
    "Machine",
    "TaskEnd",
    "ScriptResult",
    "Run",
    "run_scenario",
    "sweep",
    "MAX_DURATION_S",
    "MAX_SEED",
    "__version__",
]

__version__: str = _memcgsim.__version__

Duration = Union[str, int, float]


#: The longest duration, in seconds (10**18 nanoseconds, as the scripts allow).
MAX_DURATION_S = 1_000_000_000

#: The largest seed: seeds are unsigned 64-bit numbers.
MAX_SEED = 2**64 - 1


def _type_name(value: Any) -> str:
    return type(value).__name__


def _duration_ns(d: Duration) -> int:
    """A duration in nanoseconds: a string as the scripts write it ("250ms", "2s") or a
    number of seconds from 0 to MAX_DURATION_S."""
    if isinstance(d, str):
        return _memcgsim.duration_ns(d)
    if isinstance(d, (int, float)) and not isinstance(d, bool):
        if not (isinstance(d, int) or math.isfinite(d)) or not 0 <= d <= MAX_DURATION_S:
            raise ValueError(
                f"duration {d!r} is outside 0 to {MAX_DURATION_S} seconds "
                "(a finite number of seconds, or a string such as '2s')"
            )
        return int(round(d * 1e9))
    raise TypeError(
        f"a duration is a string such as '2s' or a number of seconds, not {_type_name(d)}"
    )


def _int_in(what: str, value: Any, lo: int, hi: int) -> int:
    """``value`` as an int from ``lo`` to ``hi``: TypeError for what is no int (a bool is
    none), ValueError with the range for an int outside it."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{what} must be an int, not {_type_name(value)}")
    if not lo <= value <= hi:
        raise ValueError(f"{what} must be from {lo} to {hi}, not {value}")
    return value


def _path(what: str, path: Any) -> str:
    """A file path given as str or os.PathLike; TypeError for anything else."""
    try:
        p = os.fspath(path)
    except TypeError:
        raise TypeError(f"{what} must be a str or os.PathLike, not {_type_name(path)}") from None
    if not isinstance(p, str):
        raise TypeError(f"{what} must be a str path, not {_type_name(p)}")
    return p


def _setting(key: str, value: Any) -> str:
    """A machine setting as its ``machine`` line writes it: str, int, float or bool."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if key == "seed":
        return str(_int_in("seed", value, 0, MAX_SEED))
    if isinstance(value, (str, int, float)):
        return str(value)
    raise TypeError(f"machine setting {key} must be a str or a number, not {_type_name(value)}")


@dataclass(frozen=True)
class TaskEnd:
    """How a task ended, or that it holds its memory (``status`` None).

    ``status`` is the shell's ``$?`` (128 + 9 for a task killed by SIGKILL), ``oom`` the
    cgroup whose OOM killed it ("" for a machine-wide OOM, None when no OOM killed it),
    ``elapsed_s`` its run time in virtual seconds, ``error`` why a task that could not do
    its work exited (``status`` 1), as the program reports it.
    """

    name: str
    status: Optional[int]
    killed: bool
    oom: Optional[str]
    elapsed_s: float
    #: The failed system call the program reported before it exited (the overcommit check
    #: refusing its mapping, say), or None.
    error: Optional[str] = None

    @property
    def holding(self) -> bool:
        """The task finished its work and holds its memory (a ``--hold`` workload)."""
        return self.status is None


def _task_end(t: Any) -> TaskEnd:
    name, status, killed, oom, elapsed_ns, error = t
    return TaskEnd(name, status, killed, oom, elapsed_ns / 1e9, error)


@dataclass(frozen=True)
class ScriptResult:
    """What :meth:`Machine.script` did: the exit status (0, 1 when an ``expect`` failed, 2
    on a script error), what the script printed, its error output, and how many of its
    ``expect`` lines failed."""

    status: int
    output: str
    errors: str
    expect_failures: int


class Machine:
    """A simulated machine with a cgroup filesystem, cgroup v2 unless ``cgroup="v1"``.

    The keyword arguments are the keys of a script's ``machine`` line (docs/SCRIPTING.md):
    ``memory``, ``swap``, ``cpus``, ``seed``, ``swappiness``, ``disk`` and the others; an
    unknown key or a bad value raises ValueError (with the allowed range for a number), a
    value of another type than str, int, float or bool TypeError. Virtual time advances
    only through :meth:`run`, :meth:`sleep` and :meth:`wait`.
    """

    def __init__(
        self,
        memory: Optional[str] = None,
        swap: Optional[str] = None,
        cpus: Optional[int] = None,
        **keys: Any,
    ) -> None:
        settings = []
        for k, v in (("memory", memory), ("swap", swap), ("cpus", cpus)):
            if v is not None:
                settings.append((k, _setting(k, v)))
        settings.extend((k, _setting(k, v)) for k, v in keys.items())
        self._m = _memcgsim.Machine(settings)

    def mkdir(self, path: str) -> None:
        """Create a cgroup. Raises OSError (FileExistsError, FileNotFoundError, ...)."""
        self._m.mkdir(path)

    def rmdir(self, path: str) -> None:
        """Remove a cgroup (EBUSY while it has tasks or children)."""
        self._m.rmdir(path)

    def write(self, path: str, value: Union[str, int]) -> None:
        """Write a value to a control file, as ``echo VALUE > PATH`` does.

        Raises OSError with the errno the kernel returns (EINVAL, EBUSY, EAGAIN, ...), and
        TypeError for a value that is neither str nor int."""
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            raise TypeError(f"a control file takes a str or an int, not {_type_name(value)}")
        self._m.write(path, str(value))

    def read(self, path: str) -> str:
        """The text of a control file (or of /proc/meminfo, /proc/vmstat, ...)."""
        return self._m.read(path)

    def listdir(self, path: str = "/") -> List[str]:
        """The entries of a cgroup directory."""
        return self._m.listdir(path)

    def run(
        self,
        cgroup: str,
        workload: str,
        *args: Any,
        background: bool = False,
        name: Optional[str] = None,
        oom_score_adj: int = 0,
    ) -> Optional[TaskEnd]:
        """Start a workload (docs/SCRIPTING.md, "Workloads") in a cgroup.

        In the foreground (the default) it runs until it ends, or until it holds its memory
        (``--hold``), and its :class:`TaskEnd` is returned; with ``background=True`` it is
        started and None is returned (:meth:`wait` and :meth:`kill` take its ``name``, which
        defaults to the workload's). Bad arguments raise ValueError; a cgroup the task
        cannot join raises OSError. A task that cannot do its work (a mapping the overcommit
        check refuses) ends with status 1 and says why in its ``error``."""
        _int_in("oom_score_adj", oom_score_adj, -1000, 1000)
        out = self._m.run(
            cgroup, workload, [str(a) for a in args], background, name, oom_score_adj
        )
        return None if out is None else _task_end(out)

    def sleep(self, duration: Duration) -> None:
        """Let virtual time pass: "2s", "250ms", or a number of seconds from 0 to
        MAX_DURATION_S (ValueError outside it)."""
        self._m.sleep_ns(_duration_ns(duration))

    def wait(self, name: str) -> TaskEnd:
        """Wait for a background task to end (or to hold its memory)."""
        return _task_end(self._m.wait(name))

    def kill(self, name: str) -> None:
        """SIGKILL a task (ESRCH once it has ended)."""
        self._m.kill(name)

    def script(self, text: str) -> ScriptResult:
        """Run script text (docs/SCRIPTING.md) on this machine: its cgroups, files and
        tasks are the ones this object sees. It cannot contain a ``machine`` line."""
        return ScriptResult(*self._m.script(text))

    @property
    def now(self) -> float:
        """Virtual time since boot, in seconds."""
        return self._m.now_ns() / 1e9


class Run(NamedTuple):
    """One run of a scenario: ``summary`` is summary.json as a dict (docs/SCENARIOS.md),
    ``series`` the time series in long format (columns ``time_s``, ``cgroup``, ``key``,
    ``value``): a pandas DataFrame when pandas is installed, else a list of dicts."""

    summary: Dict[str, Any]
    series: Any


def run_scenario(path: Union[str, "os.PathLike[str]"], variant: Optional[str] = None, seed: Optional[int] = None) -> Run:
    """Run one variant of a scenario file with one seed, as ``memcgsim run`` does.

    ``variant`` defaults to the scenario's base variant and ``seed`` to the first of its
    seeds (an int from 0 to MAX_SEED). A file that cannot be read (the scenario, a trace)
    raises the OSError of its errno (FileNotFoundError, IsADirectoryError, ...); a scenario
    error (file, line and what is wrong) raises ValueError; an argument of the wrong type
    TypeError."""
    path = _path("path", path)
    if variant is not None and not isinstance(variant, str):
        raise TypeError(f"variant must be a str, not {_type_name(variant)}")
    if seed is not None:
        _int_in("seed", seed, 0, MAX_SEED)
    summary, t, cg, key, val = _memcgsim.run_scenario(path, variant, seed)
    columns = {"time_s": t, "cgroup": cg, "key": key, "value": val}
    try:
        import pandas
    except ImportError:
        series: Any = [
            {"time_s": a, "cgroup": b, "key": c, "value": d} for a, b, c, d in zip(t, cg, key, val)
        ]
    else:
        series = pandas.DataFrame(columns)
    return Run(json.loads(summary), series)
