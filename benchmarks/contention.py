"""Whole commands on a quiet machine and beside busy processes: wall and CPU time, and ratios.

Each command runs as a child process, once with the machine as it is ("quiet") and once beside
``--busy`` processes that spin forever (``python -c 'while True: pass'``, default 2: as many
as the reference machine has cores), alternating quiet and loaded so that a drift in the other
users' load touches both. For every run it prints the wall time, the child's CPU time (user +
system, from ``resource.getrusage(RUSAGE_CHILDREN)`` around the run) and the 1-minute load
average before the run; then per command and variant the median and range over the repeats and
the ratios loaded / quiet of the medians (the targets: wall at most 1.6x, CPU at most 1.2x).
The command ``control`` (a fixed pure-Python loop, one thread) measures how much the machine
itself inflates CPU time under load.

Variants compare interpreters (an install of another version: ``--variant before=/path/to/
python``) or environments (``--variant workqueue=NUMBA_THREADING_LAYER=workqueue``; several
``KEY=VALUE`` separated by commas) in the same run. The default variant is this interpreter
with the environment as it is. A command's first word ``track-float`` or ``rankmodels`` runs
that entry point of the variant's interpreter.

    python benchmarks/contention.py [--repeats 3] [--busy 2] [--variant NAME=SPEC ...]
                                    [--command 'track-float data/float767.nc --no-plots' ...]

Batch mode: ``--floats N`` simulates N floats of ``--days`` days (``rankmodels
simulate-float``, seeds 1..N, drift / straight / spiral in turn) into a folder that ``{floats}``
in a command names, e.g. ``--command 'track-float {floats} --no-plots --workers 2'``; such
commands also report floats per minute.

Every variant runs every command once before timing (warm numba cache). ``--cold`` instead
gives every run a fresh, empty numba cache (``NUMBA_CACHE_DIR``): the first run after an
install, compile included. Outputs go to a temporary folder (``--out`` is appended to each
``track-float`` command).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_COMMANDS = (
    "control",
    "track-float data/float767.nc --no-plots",
    "track-float data/float767.nc --no-plots --no-calibrate",
)
#: Entry points: first word of a command -> the code the variant's interpreter runs.
ENTRY_POINTS = {
    "track-float": "from rankmodels_app.track import track_float_main as m; m()",
    "rankmodels": "from rankmodels_app.cli import main as m; m()",
}
BUSY_CODE = "while True: pass"
#: The command ``control``: fixed single-threaded work without threads or I/O. Its CPU time
#: loaded / quiet is what the machine itself adds under load (shared caches, context
#: switches, a hypervisor's overcommitted host): the floor of every command's CPU ratio.
CONTROL_CODE = "s = 0\nfor i in range(30_000_000): s += i"


@dataclass(frozen=True)
class Variant:
    """An interpreter and the environment additions it runs with."""

    name: str
    python: str
    env: dict[str, str]


@dataclass(frozen=True)
class Run:
    """One timed run."""

    variant: str
    command: str
    loaded: bool
    wall: float
    cpu: float
    load_before: float
    returncode: int


def parse_variant(text: str) -> Variant:
    """``NAME=PYTHON`` (an interpreter path) or ``NAME=KEY=VALUE[,KEY=VALUE...]``."""
    name, _, spec = text.partition("=")
    if not name or not spec:
        raise argparse.ArgumentTypeError(f"variant {text!r}: expected NAME=PYTHON or NAME=K=V,...")
    if "=" not in spec:
        return Variant(name, spec, {})
    env = dict(item.split("=", 1) for item in spec.split(","))
    return Variant(name, sys.executable, env)


def argv(variant: Variant, command: str, out: Path, floats: Path | None = None) -> list[str]:
    """The child's argument list: the entry point of ``command``'s first word under the
    variant's interpreter, ``{floats}`` replaced by the folder ``floats``, ``--out`` into
    ``out`` for track-float."""
    if command == "control":
        return [variant.python, "-c", CONTROL_CODE]
    words = shlex.split(command.replace("{floats}", str(floats)))
    head, rest = words[0], words[1:]
    if head in ENTRY_POINTS:
        if head == "track-float":
            rest += ["--out", str(out)]
        return [variant.python, "-c", ENTRY_POINTS[head], *rest]
    return words


@contextlib.contextmanager
def busy(n: int) -> Iterator[None]:
    """``n`` processes spinning on a core each while the block runs."""
    procs = [subprocess.Popen([sys.executable, "-c", BUSY_CODE]) for _ in range(n)]
    try:
        time.sleep(1.0)  # let them reach the scheduler's steady state
        yield
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()


def simulate_floats(python: str, folder: Path, n: int, days: int) -> None:
    """``n`` simulated floats of ``days`` days in ``folder`` (seeds 1..n)."""
    for seed in range(1, n + 1):
        trajectory = ("drift", "straight", "spiral")[(seed - 1) % 3]
        words = ["simulate-float", "--out", str(folder), "--name", f"float{seed:02d}"]
        words += ["--days", str(days), "--seed", str(seed), "--trajectory", trajectory, "-q"]
        command = [python, "-c", ENTRY_POINTS["rankmodels"], *words]
        subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)


def timed(
    variant: Variant,
    command: str,
    loaded: bool,
    workdir: Path,
    floats: Path | None = None,
    cold: bool = False,
) -> Run:
    """Run ``command`` once (``cold``: with an empty numba cache); wall time and the child's
    user + system CPU time."""
    out = Path(tempfile.mkdtemp(dir=workdir))
    env = {**os.environ, **variant.env}
    if cold:
        env["NUMBA_CACHE_DIR"] = str(out / "numba-cache")
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        argv(variant, command, out / "run", floats),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 3):  # 3: a quality check failed, the run itself is fine
        print(done.stderr[-2000:], file=sys.stderr)
    return Run(variant.name, command, loaded, wall, cpu, load, done.returncode)


def spread(values: list[float]) -> str:
    """``median (min-max)``."""
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def summarise(runs: list[Run], busy_n: int, n_floats: int) -> None:
    """Per variant and command: quiet and loaded medians with ranges, and the ratios; floats
    per minute (of the median wall) for batch commands."""
    print(
        f"\n| variant | command | quiet wall s | loaded wall s | wall x | quiet CPU s "
        f"| loaded CPU s | CPU x |   ({busy_n} busy processes; median (min-max))"
    )
    print("|---|---|---|---|---|---|---|---|")
    keys = dict.fromkeys((r.variant, r.command) for r in runs)
    for variant, command in keys:
        mine = [r for r in runs if (r.variant, r.command) == (variant, command)]
        quiet = [r for r in mine if not r.loaded]
        loaded = [r for r in mine if r.loaded]
        qw, lw = [r.wall for r in quiet], [r.wall for r in loaded]
        qc, lc = [r.cpu for r in quiet], [r.cpu for r in loaded]
        print(
            f"| {variant} | `{command}` | {spread(qw)} | {spread(lw)} "
            f"| {statistics.median(lw) / statistics.median(qw):.2f} | {spread(qc)} "
            f"| {spread(lc)} | {statistics.median(lc) / statistics.median(qc):.2f} |"
        )
    for variant, command in keys:
        if "{floats}" in command:
            mine = [r for r in runs if (r.variant, r.command) == (variant, command)]
            rates = [
                f"{60 * n_floats / statistics.median([r.wall for r in mine if r.loaded == x]):.1f}"
                f" {'loaded' if x else 'quiet'}"
                for x in (False, True)
            ]
            print(f"{variant} `{command}`: floats per minute {', '.join(rates)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--busy", type=int, default=2, help="busy processes beside the loaded runs")
    parser.add_argument("--command", action="append", help="a command (repeatable)")
    parser.add_argument("--variant", action="append", type=parse_variant, help="NAME=SPEC")
    parser.add_argument("--no-warmup", action="store_true", help="skip the untimed first runs")
    parser.add_argument("--cold", action="store_true", help="an empty numba cache for every run")
    parser.add_argument("--floats", type=int, default=0, help="simulated floats for {floats}")
    parser.add_argument("--days", type=int, default=120, help="days of each simulated float")
    args = parser.parse_args()
    # stopped by a signal, the busy processes and the running command are killed too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    commands = args.command or list(DEFAULT_COMMANDS)
    variants = args.variant or [Variant("this", sys.executable, {})]
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at the start")
    runs: list[Run] = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        floats = workdir / "floats" if args.floats else None
        if floats is not None:
            simulate_floats(variants[0].python, floats, args.floats, args.days)
        if not (args.no_warmup or args.cold):
            for variant in variants:
                for command in commands:
                    timed(variant, command, False, workdir, floats)
        for repeat in range(args.repeats):
            for loaded in (repeat % 2 == 1, repeat % 2 == 0):  # alternate which comes first
                with busy(args.busy) if loaded else contextlib.nullcontext():
                    for variant in variants:
                        for command in commands:
                            run = timed(variant, command, loaded, workdir, floats, args.cold)
                            runs.append(run)
                            print(
                                f"{run.variant:>10} {'loaded' if loaded else 'quiet':>6} "
                                f"wall {run.wall:6.1f} s  cpu {run.cpu:6.1f} s  "
                                f"load {run.load_before:4.1f}  rc {run.returncode}  {command}",
                                flush=True,
                            )
    summarise(runs, args.busy, args.floats)


if __name__ == "__main__":
    main()
