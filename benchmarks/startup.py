"""Benchmark: ``--help`` of every command, whole processes, as users type them.

For every page of ``rankmodels_app/help_pages.json`` (every command of ``rankmodels``,
``track-float`` and ``aggregate``) it runs the command line ``PROGRAM [COMMAND...] --help``
three ways, each a child process, and prints wall and CPU time (``os.wait4``):

* ``stored`` -- the installed console script (this environment's ``bin/``): the stored page;
* ``click`` -- the same command rendered by click in this tree (imports the command's module);
* ``before`` -- with ``--before DIR``, click in another source tree (``PYTHONPATH=DIR``; make
  it with ``git archive REV | tar -x -C DIR`` and ``ln -s apps DIR/rankmodels_app``).

Run: ``python benchmarks/startup.py [--repeats 3] [--before DIR]``; medians over the repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "apps" / "help_pages.json"
#: How click renders each program's help without the stored pages.
CLICK = {
    "rankmodels": "from rankmodels_app.cli import cli; cli(prog_name='rankmodels')",
    "track-float": "from rankmodels_app.track import track_float_main as m; m()",
    "aggregate": "from rankmodels_app.aggregate import aggregate_main as m; m()",
}


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one child process (its output discarded), run in the folder
    that ``env``'s ``PYTHONPATH`` names (``python -c`` puts the working folder first)."""
    started = time.perf_counter()
    cwd = env.get("PYTHONPATH", ROOT)
    proc = subprocess.Popen(argv, cwd=cwd, env={**os.environ, **env}, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}")
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", type=Path, default=None, help="another source tree")
    args = parser.parse_args()
    scripts = Path(sys.executable).parent
    ways = {
        "stored": lambda program, words: ([str(scripts / program), *words], {}),
        "click": lambda program, words: ([sys.executable, "-c", CLICK[program], *words], {}),
    }
    if args.before:
        ways["before"] = lambda program, words: (
            [sys.executable, "-c", CLICK[program], *words],
            {"PYTHONPATH": str(args.before)},
        )
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at the start")
    print("| command | " + " | ".join(f"{w} wall s (CPU s)" for w in ways) + " |")
    print("|---|" + "---|" * len(ways))
    worst = dict.fromkeys(ways, 0.0)
    for key in json.loads(PAGES.read_text(encoding="utf-8"))["pages"]:
        program, *path = key.split()
        cells = []
        for way, make in ways.items():
            argv, env = make(program, [*path, "--help"])
            runs = [run(argv, env) for _ in range(args.repeats)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            worst[way] = max(worst[way], wall)
            cells.append(f"{wall:.2f} ({cpu:.2f})")
        print(f"| `{key} --help` | " + " | ".join(cells) + " |", flush=True)
    print("slowest: " + ", ".join(f"{w} {t:.2f} s" for w, t in worst.items()))
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
