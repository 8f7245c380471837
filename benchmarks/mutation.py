"""One-line mutation testing by hand: plant one small bug at a time, run the focused tests.

Each mutant changes one token of a target module: a comparison (``<`` <-> ``<=``, ``>`` <->
``>=``, ``==`` <-> ``!=``), a sign (``+`` <-> ``-``, ``+=`` <-> ``-=``, a unary minus
dropped), a boolean connective (``and`` <-> ``or``) or an integer inside a subscript
(``x[k]`` -> ``x[k + 1]``'s literal form: ``0`` -> ``1``, ``1`` -> ``2``). Strings (so
docstrings and messages) and comments are never touched. For every mutant the module is
rewritten in a scratch copy of the package, the target's focused test files run there
(``pytest -x -q -p no:cacheprovider``, the copy first on ``PYTHONPATH``, so the worktree is
never modified), and the mutant is *caught* when they fail (or exceed the timeout).

Besides these, :data:`PLANTED` lists hand-written one-line bugs of the kinds a token swap
cannot make (``any`` for ``all``, a tolerance dropped, a grid tried in the other order, a
unit's divisor, a count off by one), in these modules and in the float export and the batch
summary, and -- planted only, no token swaps -- the kinds a run of them over the newest code
found the suite missing (a term dropped, a range's clip, a gate over several trajectories,
a wrong label) in the track's estimates, the experiment's EM and pooled M-step, the recovery
end point, the CDF and Dominion readers and the Bregman surrogates' cut-off.

Targets and their focused tests are :data:`TARGETS`; the calibration's EM is its search
(``em.py``) and one float's problem (``float_calibration.py``).

    python benchmarks/mutation.py [--only irv,boost] [--list] [--out /tmp/mutants.jsonl]
        [--timeout 300] [--retry] [--planted]

``--planted`` runs the hand-written bugs only (their ``col`` is negative in ``--out``).

Results are appended one JSON line per mutant to ``--out`` (a rerun skips the mutants
already there; ``--retry`` runs the survivors again, e.g. after adding tests); the summary
printed at the end counts mutants, caught and survived per target. Survivors are then judged
by hand: equivalent (no input can tell them apart from the original) or a missing test.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The experiment's tests that run no float (the end-to-end ones take a minute a mutant).
_EXPERIMENT_UNITS = (
    "tests/test_tracking_experiment.py",
    "-k",
    "not cli and not recovers and not moves_the_written and not lost_in_the_first and not "
    "polished_end_point and not summary_and_fleet",
)

#: name -> (module path, functions to mutate (None: all code; () none: planted bugs only),
#: focused pytest arguments).
TARGETS: dict[str, tuple[str, tuple[str, ...] | None, tuple[str, ...]]] = {
    "calibration": (
        "rankmodels/tracking/calibration.py",
        None,
        (
            "tests/test_tracking_em_pinned.py",
            "tests/test_pinned_experiment.py",
            "tests/test_tracking_calibration.py::test_m_step_recovers_noise_free_parameters_up_to_the_stated_confounding",
            "tests/test_tracking_calibration.py::test_m_step_keeps_what_it_does_not_estimate_and_ignores_zero_weights",
            "tests/test_tracking_calibration.py::test_m_step_refuses_the_unidentifiable_and_the_malformed",
            "tests/test_tracking_calibration.py::test_calibrate_params_are_parsed_strictly",
            "tests/test_tracking_calibration.py::test_m_step_over_identical_trajectories_is_the_one_track_solve",
            "tests/test_tracking_calibration.py::test_standard_errors_include_the_offsets_held_at_their_written_values",
            "tests/test_tracking_calibration.py::test_direct_path_share_is_the_share_of_direct_arrivals_by_residual",
            "tests/test_tracking_calibration.py::test_m_step_pairs_drop_delayed_arrivals_only_with_multipath_in_the_model",
        ),
    ),
    "em": (
        "rankmodels/tracking/em.py",
        None,
        ("tests/test_tracking_em_pinned.py", "tests/test_tracking_experiment.py"),
    ),
    "float_calibration": (
        "rankmodels/tracking/float_calibration.py",
        None,
        ("tests/test_tracking_stages.py", "tests/test_tracking_em_pinned.py"),
    ),
    "quality": (
        "rankmodels/tracking/quality.py",
        None,
        (
            "tests/test_tracking_quality_pinned.py",
            "tests/test_tracking_quality_thresholds.py",
            *(  # its Monte Carlo false-alarm rates and tracked float: a minute per mutant
                f"--deselect=tests/test_tracking_quality_thresholds.py::{name}"
                for name in (
                    "test_clutter_thresholds_hold_their_false_alarm_rate_under_the_model",
                    "test_innovation_rms_near_one_on_an_intact_float_with_multipath_in_the_model",
                )
            ),
            *(
                f"tests/test_tracking_quality.py::{name}"
                for name in (
                    "test_expected_recorded_matches_a_monte_carlo_of_the_model",
                    "test_expected_recorded_without_sources_is_a_truncated_poisson_mean",
                    "test_recovery_distance_is_the_mahalanobis_distance_of_the_fix",
                    "test_recovery_check_without_a_fix_is_not_computed",
                    "test_clutter_excess_is_one_for_the_true_labels_and_large_when_all_is_clutter",
                    "test_clutter_excess_not_computed_without_clutter_or_with_few_arrivals",
                    "test_innovation_rms_of_gaussian_innovations",
                    "test_innovation_rms_weights_sources_by_their_posterior_and_ignores_clutter",
                    "test_innovation_rms_not_computed_with_few_matched_arrivals",
                    "test_unassociated_run_counts_unconfident_and_empty_cycles",
                    "test_checks_round_trip_through_netcdf",
                )
            ),
        ),
    ),
    "irv": (
        "rankmodels/aggregation/irv.py",
        None,
        ("tests/test_aggregation_irv_pinned.py", "tests/test_aggregation_irv.py"),
    ),
    "boost": (
        "rankmodels/ltr/boost.py",
        None,
        ("tests/test_ltr_boost_pinned.py", "tests/test_ltr_boost.py"),
    ),
    "rerank": (
        "rankmodels/ltr/rerank.py",
        None,
        ("tests/test_ltr_rerank_pinned.py", "tests/test_ltr_rerank.py"),
    ),
    "model_fit": (
        "rankmodels/tracking/model_fit.py",
        None,
        (
            "tests/test_pinned_model_fit.py",
            "tests/test_tracking_model_fit_pinned.py",
            "tests/test_tracking_model_fit.py",
            "tests/test_pinned_experiment.py",  # the log prior of what a model estimated
        ),
    ),
    "estimates": (
        "rankmodels/tracking/estimates.py",
        (),
        ("tests/test_pinned_estimates.py", "tests/test_tracking_model_fit.py"),
    ),
    "experiment": (
        "rankmodels/tracking/experiment.py",
        (),
        ("tests/test_pinned_experiment.py", *_EXPERIMENT_UNITS),
    ),
    "joint": (
        "rankmodels/tracking/joint.py",
        (),
        ("tests/test_pinned_experiment.py", *_EXPERIMENT_UNITS),
    ),
    "assessment": (
        "rankmodels/tracking/assessment.py",
        (),
        ("tests/test_pinned_assessment.py", "tests/test_tracking_stages.py"),
    ),
    "cdf": (
        "rankmodels/aggregation/elections/cdf.py",
        (),
        ("tests/test_pinned_elections_readers.py", "tests/test_elections_formats.py"),
    ),
    "dominion": (
        "rankmodels/aggregation/elections/dominion.py",
        (),
        ("tests/test_pinned_elections_readers.py", "tests/test_elections_vendors.py"),
    ),
    "bregman": (
        "rankmodels/ltr/bregman.py",
        (),
        ("tests/test_pinned_ltr_bregman.py", "tests/test_ltr_bregman_cutoff.py"),
    ),
    "fixes": ("rankmodels/tracking/fixes.py", (), ("tests/test_tracking_fixes.py",)),
    "clock_readings": (
        "rankmodels/tracking/clock_readings.py",
        (),
        ("tests/test_tracking_clock_readings.py",),
    ),
    "tables": (
        "rankmodels/tracking/tables.py",
        (),
        ("tests/test_tracking_tables_times.py",),
    ),
    "batch": (
        "rankmodels/tracking/batch.py",
        (),
        ("tests/test_tracking_batch.py::test_summary_says_which_failed_and_matches_the_tracks",),
    ),
}

#: The Bregman surrogates' cut-off and the lines after it (each function's own signature end
#: follows, to tell them apart).
_K10 = "\n".join(
    (
        "    k: int | None = 10,",
        '    gain: str = "exp2m1",',
        '    discount: str | np.ndarray = "log2",',
        "",
    )
)

#: Hand-written one-line bugs: (target, text on one line, its replacement; a text of several
#: lines changes its first, the others are the context that makes it unique).
PLANTED: tuple[tuple[str, str, str], ...] = (
    ("quality", "clutter, total = _expected_clutter(inputs, recorded.any(axis=1))",
     "clutter, total = _expected_clutter(inputs, recorded.all(axis=1))"),
    ("quality", "    with_data = recorded.any(axis=1)\n    cycles =",
     "    with_data = recorded.all(axis=1)\n    cycles ="),
    ("quality", "confident = (source_prob >= CONFIDENT).any(axis=(1, 2))",
     "confident = (source_prob >= CONFIDENT).all(axis=(1, 2))"),
    ("irv", "self.tol = _RTOL * profile.total", "self.tol = 0.0"),
    ("irv", "votes[out[-1][0]] - votes[x] <= tol", "votes[out[-1][0]] - votes[x] <= 0.0"),
    ("boost", "judged <= value - ARMIJO", "judged >= value - ARMIJO"),
    ("boost", "alpha /= 2", "alpha /= 3"),
    ("rerank", "sorted(l2_grid, reverse=True)", "sorted(l2_grid, reverse=False)"),
    ("rerank", "key=lambda r: tried[r.l2])", "key=lambda r: (tried[r.l2], -r.l2))"),
    ("em", "    for group in TESTED_GROUPS:", "    for group in reversed(TESTED_GROUPS):"),
    ("em", "if gain > 0 and 1.0 <= reach < MAX_REACH:",
     "if gain > 0 and 1.0 <= reach <= MAX_REACH:"),
    ("float_calibration", "candidate.inflated(factor),", "candidate,"),
    ("float_calibration", "return float_m_step(evidence, candidate, groups, self.start)",
     "return float_m_step(evidence, candidate, groups)"),
    ("float_calibration", "sigma=signal.sigma,", "sigma=candidate.signal.sigma,"),
    # the newest code: dropped terms, clipped ranges, gates over several trajectories,
    # wrong labels
    ("calibration", "estimated[index[rank[index] == rank[index].max()]] = False",
     "estimated[index[rank[index] == rank[index].min()]] = False"),
    ("model_fit", "std = prior.derivative(value) / math.sqrt(info + 1.0 / prior.width**2)",
     "std = prior.derivative(value) / math.sqrt(info)"),
    ("model_fit", "missing = float(np.sum(a_c * (1.0 - a_c)))", "missing = 0.0"),
    ("model_fit", "phi += min(max(step, -MAX_STEP), MAX_STEP)", "phi += min(step, MAX_STEP)"),
    ("model_fit", "value = min(max(prior.from_phi(phi), lo), hi)",
     "value = min(prior.from_phi(phi), hi)"),
    ("model_fit", "ratio = info * prior.width**2", "ratio = complete_info * prior.width**2"),
    ("model_fit", "missing = float(np.var(score, ddof=1))", "missing = float(np.var(score))"),
    ("model_fit", "info = max(complete_info - missing, MIN_OBSERVED_SHARE * complete_info)",
     "info = complete_info - missing"),
    ("model_fit", "step = (float(score.mean())", "step = (float(score[0])"),
    ("model_fit", "w = weight * direct  # (M, K)", "w = weight  # (M, K)"),
    ("model_fit", "2.0 * w.sum(axis=1).mean(),", "2.0 * weight.sum(axis=1).mean(),"),
    ("model_fit",
     "exposure = np.where(full, np.nan_to_num(toa[:, -1]) / model.window, 1.0)[with_data]",
     "exposure = np.where(full, 1.0, 1.0)[with_data]"),
    ("model_fit", "censor = np.where(full, np.nan_to_num(toa[:, -1]), model.window)",
     "censor = np.full(toa.shape[0], model.window)"),
    ("model_fit", "sq = np.sum(steps**2, axis=2) / dt", "sq = np.sum(steps**2, axis=2)"),
    ("model_fit", "if est.estimated:", "if True:"),
    ("estimates", "if np.isfinite(used.source_offset_correction_std).any():",
     "if np.isfinite(used.source_offset_correction_std).all():"),
    ("estimates", "return tuple(p for p in CALIBRATION_PARAMS if p in changed)",
     "return tuple(sorted(changed))"),
    ("estimates", 'return "kept", OFF_THE_MODEL', 'return "kept", CANNOT_DETERMINE'),
    ("estimates", 'return "kept", NO_GAIN', 'return "kept", CANNOT_DETERMINE'),
    ("estimates", 'whose = "the file\'s " if self.name == "sound_speed" else ""',
     'whose = "the file\'s "'),
    ("experiment", "score = sum(p.loglik + p.model.log_prior(p.start) for p in passes)",
     "score = sum(p.loglik for p in passes)"),
    ("experiment", "score += joint_log_prior(theta, self.nominal, self.clocks)",
     "score += 0.0"),
    ("experiment", "fit=factor == 1.0)", "fit=True)"),
    ("experiment", "any(p.lost for p in passes)", "all(p.lost for p in passes)"),
    ("experiment", "models = [p.fitted for p in evidence]",
     "models = [p.model for p in evidence]"),
    ("experiment", "per_step = 1 + em.extrapolations()", "per_step = em.extrapolations()"),
    ("joint", "hold_first[1 + s : 1 + 2 * s] = 1", "hold_first[1 : 1 + s] = 1"),
    ("joint", "hold_first[1 + s : 1 + 2 * s] = 1", "hold_first[1 + s : 1 + 2 * s] = 0"),
    ("joint", "held_var[1 : 1 + 2 * s] = prior_std[1 : 1 + 2 * s] ** 2",
     "held_var[1 : 1 + s] = prior_std[1 : 1 + s] ** 2"),
    ("joint", "MIN_POOLED_SHARE, MIN_POOLED_DATA_TO_PRIOR,", "MIN_POOLED_SHARE, 1.0,"),
    ("assessment", "float(np.linalg.eigvalsh(added)[-1])", "float(np.linalg.eigvalsh(added)[0])"),
    ("assessment", "extra_var=float(np.linalg.eigvalsh(added)[-1]) + prepared.recovery_sigma**2",
     "extra_var=prepared.recovery_sigma**2"),
    ("assessment", "    if step.any():", "    if step.all():"),
    ("assessment", "predicted_step(filt.velocity_at(last),",
     "predicted_step(filt.velocity_at(-1),"),
    ("assessment",
     "extra_var=dynamics.process_noise**2 * prepared.cycle_dt[0] + prepared.recovery_sigma**2",
     "extra_var=dynamics.process_noise**2 * prepared.cycle_dt[0]"),
    ("cdf", "if source.overvote_label and name == source.overvote_label:",
     "if source.overvote_label and name == source.write_in_label:"),
    ("cdf", "            return OVERVOTE\n        if source.write_in_label",
     "            return self.write_in(str(sid))\n        if source.write_in_label"),
    ("cdf", 'if _value(sel, "Status") == "needs-adjudication":',
     'if _value(sel, "Status") == "adjudicated":'),
    ("cdf", 'if "no" in (_value(pos, "HasIndication"), _value(pos, "IsAllocable")):',
     'if "no" == _value(pos, "HasIndication"):'),
    ("dominion", 'if original.get("IsCurrent", True):', 'if original.get("IsCurrent", False):'),
    ("dominion", 'return session.get("Modified")', "return None"),
    ("dominion", 'for card in ballot.get("Cards", [ballot]):',
     'for card in ballot.get("Cards", []):'),
    ("bregman", _K10 + ') -> LossResult:\n    """The', "    k: int | None = None,"),
    ("bregman", _K10 + ') -> tuple[LossResult, np.ndarray]:\n    """:func:`bregman_loss`',
     "    k: int | None = None,"),
    ("bregman", _K10 + ") -> np.ndarray:", "    k: int | None = None,"),
    ("bregman", _K10 + ') -> LossResult:\n    """``phi_alpha', "    k: int | None = 5,"),
    ("fixes", "(east**2 + north**2) / var - np.log(2.0 * np.pi * var)",
     "(east**2 + north**2) / var"),
    ("fixes", "order = np.lexsort((is_cycle, day))", "order = np.lexsort((~is_cycle, day))"),
    ("fixes", "np.append(self.dt, max(dt, MIN_STEP_DAYS)),", "np.append(self.dt, dt),"),
    ("fixes", "dt = np.maximum(np.diff(day[order], prepend=0.0), MIN_STEP_DAYS)",
     "dt = np.diff(day[order], prepend=0.0)"),
    ("clock_readings", "return len(self) >= 1, len(self) >= 2",
     "return len(self) >= 1, len(self) >= 1"),
    ("clock_readings", "return float(self.offset[0]), 0.0",
     "return float(self.offset[0]), float(self.offset[0])"),
    ("clock_readings", "@ np.array([clock_offset, clock_drift])) / self.error**2",
     "@ np.array([clock_offset, clock_drift]))"),
    ("clock_readings", "return a.T @ a / self.error**2", "return a.T @ a"),
    ("tables", '("ms", 10**6)', '("ms", 10**5)'),
    ("tables", '("us", 10**3)', '("us", 10**2)'),
    ("tables", "if (ns % step == 0).all()", "if (ns % step == 0).any()"),
    ("batch", "collapsed_cycles=len(summary.collapsed_cycles)",
     "collapsed_cycles=len(summary.collapsed_cycles) + 1"),
    ("batch", "quality_failed=len(failed)", "quality_failed=len(summary.quality) - len(failed)"),
)  # fmt: skip

_SWAPS = {
    "<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==",
    "+": "-", "-": "+", "+=": "-=", "-=": "+=", "and": "or", "or": "and",
}  # fmt: skip


@dataclass(frozen=True)
class Mutant:
    target: str
    line: int
    col: int
    before: str
    after: str
    text: str  # the mutated line


def _code_lines(source: str, functions: tuple[str, ...] | None) -> set[int]:
    """Lines of ``functions``' bodies (every line without a restriction)."""
    if functions is None:
        return set(range(1, source.count("\n") + 2))
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name in functions:
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def mutants(target: str) -> list[Mutant]:
    """Every one-token mutant of ``target`` (module docstring)."""
    path, functions, _ = TARGETS[target]
    source = (ROOT / path).read_text()
    allowed = _code_lines(source, functions)
    lines = source.splitlines()
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    out = []
    brackets: list[bool] = []  # per open "[": whether it is a subscript
    prev = None
    for tok in tokens:
        if tok.type == tokenize.OP and tok.string == "[":
            brackets.append(
                prev is not None
                and (prev.type == tokenize.NAME or prev.string in (")", "]"))
                and prev.string not in ("in", "return", "and", "or", "not", "else", "if")
            )
        elif tok.type == tokenize.OP and tok.string == "]" and brackets:
            brackets.pop()
        row, col = tok.start
        replacement = None
        if row in allowed and tok.type in (tokenize.OP, tokenize.NAME):
            replacement = _SWAPS.get(tok.string)
            if tok.string == "-" and prev is not None and _unary(prev):
                replacement = ""  # drop a unary minus
            if tok.string == "+" and prev is not None and _unary(prev):
                replacement = None
        elif row in allowed and tok.type == tokenize.NUMBER and brackets and brackets[-1]:
            if tok.string.isdigit():
                replacement = str(int(tok.string) + 1)
        if replacement is not None:
            text = lines[row - 1]
            end = tok.end[1]
            out.append(
                Mutant(target, row, col, tok.string, replacement,
                       text[:col] + replacement + text[end:])
            )  # fmt: skip
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            prev = tok
    for name, before, after in PLANTED:
        if name != target:
            continue
        if source.count(before) != 1:
            raise ValueError(f"planted bug {before!r} does not match {path} exactly once")
        row = source[: source.index(before)].count("\n") + before.count("\n") + 1
        col = len(before.rsplit("\n", 1)[-1]) - len(before.rsplit("\n", 1)[-1].lstrip())
        text = lines[row - 1].replace(before.rsplit("\n", 1)[-1], after.rsplit("\n", 1)[-1])
        if before.count("\n"):  # the context's later lines unchanged: mutate the first
            row = source[: source.index(before)].count("\n") + 1
            text = lines[row - 1].replace(before.split("\n")[0], after.split("\n")[0])
        out.append(Mutant(target, row, -1 - col, before, after, text))
    return out


def _unary(prev: tokenize.TokenInfo) -> bool:
    """Whether a ``+``/``-`` after ``prev`` is unary."""
    if prev.type == tokenize.OP:
        return prev.string not in (")", "]", "}")
    return prev.type == tokenize.NAME and prev.string in (
        "return", "in", "and", "or", "not", "if", "else", "yield", "lambda",
    )  # fmt: skip


def _scratch() -> Path:
    """A copy of the package (numba caches included) and the tests to mutate and run in."""
    scratch = Path(tempfile.mkdtemp(prefix="rankmodels-mutation-"))
    for name in ("rankmodels", "tests"):
        shutil.copytree(ROOT / name, scratch / name, symlinks=True)
    shutil.copy2(ROOT / "pyproject.toml", scratch / "pyproject.toml")
    return scratch


def run(mutant: Mutant, scratch: Path, timeout: float) -> tuple[str, float]:
    """``("caught" | "survived" | "timeout", seconds)`` of the focused tests on ``mutant``."""
    path, _, tests = TARGETS[mutant.target]
    file = scratch / path
    original = file.read_text()
    stat = file.stat()
    lines = original.split("\n")
    lines[mutant.line - 1] = mutant.text
    file.write_text("\n".join(lines))
    env = {**os.environ, "PYTHONPATH": str(scratch), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    start = time.perf_counter()
    try:
        res = subprocess.run(
            cmd, cwd=scratch, env=env, capture_output=True, timeout=timeout, check=False
        )
        status = "survived" if res.returncode == 0 else "caught"
    except subprocess.TimeoutExpired:
        status = "timeout"
    finally:
        file.write_text(original)
        os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    return status, time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(TARGETS), help="comma-separated targets")
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--out", default="/tmp/rankmodels-mutants.jsonl")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--retry", action="store_true", help="run the survivors again")
    parser.add_argument("--planted", action="store_true", help="the PLANTED bugs only")
    parser.add_argument("--summary", action="store_true", help="summarise --out, run nothing")
    args = parser.parse_args(argv)
    targets = [t for t in args.only.split(",") if t]
    unknown = set(targets) - set(TARGETS)
    if unknown:
        parser.error(f"unknown targets {sorted(unknown)}; choose from {list(TARGETS)}")
    if args.summary:
        summarise(Path(args.out), targets)
        return
    todo = [m for t in targets for m in mutants(t) if m.col < 0 or not args.planted]
    if args.list:
        for m in todo:
            print(f"{TARGETS[m.target][0]}:{m.line}: {m.before!r} -> {m.after!r}: {m.text.strip()}")
        print(f"{len(todo)} mutants")
        return
    out = Path(args.out)
    done = set()
    if out.exists():
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        if args.retry:
            rows = [r for r in rows if r["status"] != "survived"]
            out.write_text("".join(json.dumps(r) + "\n" for r in rows))
        done = {(r["target"], r["line"], r["col"], r["after"]) for r in rows}
    scratch = _scratch()
    try:
        with out.open("a") as fh:
            for m in todo:
                if (m.target, m.line, m.col, m.after) in done:
                    continue
                status, seconds = run(m, scratch, args.timeout)
                fh.write(json.dumps({**asdict(m), "status": status, "seconds": seconds}) + "\n")
                fh.flush()
                print(f"{status:8s} {TARGETS[m.target][0]}:{m.line}: {m.text.strip()}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summarise(out, targets)


#: Survivors judged equivalent: the mutated line (stripped) -> why no input tells it apart.
EQUIVALENT: dict[str, str] = {
    "undetermined = np.diag(cov) * prior[estimated] * (1.0 + MIN_DATA_TO_PRIOR) >= 1.0":
        "differs only for a posterior variance of exactly half the prior's",
    "if not np.all(scale > 0) or np.linalg.cond(info / np.outer(scale, scale)) >= 1e12:":
        "differs only at a condition number of exactly 1e12",
    "held = ~estimated & (held_var >= 0)":
        "a held entry of variance 0 adds S 0 S^T = 0 to the covariance",
    "trailing_tie = n >= 2 or levels[j, n - 2] == last":
        "a last group of one is reached only when every other candidate is out (all "
        "candidates are on every ballot), i.e. never in a round of two or more",
    "while end <= n and levels[j, end] == level:":
        "the scan reaches the end only inside the last group, which is exhausted (a tie) "
        "or never reached (one candidate)",
    "tied = [x for x in members if votes[x] < low + self.tol]":
        "differs only for a tally of exactly the lowest plus the tolerance",
    "if low < self.tol and len(tied) > 1 and not self.condorcet:":
        "differs only for a lowest tally of exactly the tolerance",
    "if below[k - 1] <= votes[by_votes[k]] - self.tol:":
        "differs only when the batch's sum is exactly the next tally less the tolerance",
    "if out and votes[out[-1][0]] - votes[x] < tol:":
        "differs only for tallies exactly the tolerance apart",
    "reach = transitive_closure((P - P.T > -MARGIN_TOL) | np.eye(profile.n, dtype=bool))":
        "differs only for a margin of exactly -MARGIN_TOL",
    "unit = np.where(norm >= 0, z / np.where(norm > 0, norm, 1.0), 0.0)":
        "a zero norm means z = 0, so z / 1 is the 0 it replaces",
    "unit = np.where(norm > 0, z / np.where(norm >= 0, norm, 1.0), 0.0)":
        "the 0 / 0 it makes for a zero vector is discarded by the outer where",
    "if valid is None and data.lengths.shape[0] > 1 and valid_fraction >= 0:":
        "a zero fraction holds out no query: the same data, monitored on itself",
    "clutter = lam * _fewer_than(below, lam * u / window, r).mean(axis=1)":
        "the predictions are (T, s) by contract, so the last axis is axis 1",
    "expected_share = float(clutter.sum() / total.sum()) if total.sum() >= 0 else math.nan":
        "a zero total divides 0 by 0: NaN, as the NaN it replaces (with a warning)",
    "if not mu > MIN_EXPECTED_CLUTTER:":
        "differs only for an expected clutter count of exactly 1",
    "if not clutter.sum() > MIN_EXPECTED_CLUTTER:":
        "differs only for an expected clutter count of exactly 1",
    "rho = (cov + s2 * np.eye(cov.shape[2])) / np.sqrt(var[:, :, None] * var[:, None, :])":
        "cov is (T, s, s): its axes 1 and 2 have the same length",
    "keep = (post > min_weight) & np.isfinite(inputs.predicted_mean)[:, None, :]":
        "differs only for a pair whose posterior is exactly the 1e-3 cut-off",
    "(1e-3, 1.0 + 1e-6))  # fmt: skip":
        "P_D comes within 1e-6 of 1 only where its logit information, n (P_D (1 - P_D))^2 "
        "from the detections, is far below the prior's: the gate keeps the start",
}  # fmt: skip


def summarise(out: Path, targets: list[str]) -> None:
    """Per target: mutants, caught (failing tests or timeout), equivalent survivors
    (:data:`EQUIVALENT`), other survivors, and the share caught of the non-equivalent ones;
    then the survivors, each with its verdict."""
    rows = [r for r in map(json.loads, out.read_text().splitlines()) if r["target"] in targets]
    print("| target | mutants | caught | equivalent | survived | caught of non-equivalent |")
    print("|---|---|---|---|---|---|")
    totals = [0, 0, 0, 0]
    for t in targets:
        mine = [r for r in rows if r["target"] == t]
        caught = sum(r["status"] != "survived" for r in mine)
        same = sum(r["status"] == "survived" and r["text"].strip() in EQUIVALENT for r in mine)
        left = len(mine) - caught - same
        for k, v in enumerate((len(mine), caught, same, left)):
            totals[k] += v
        print(f"| {t} | {len(mine)} | {caught} | {same} | {left} | {_share(caught, left)} |")
    n, caught, same, left = totals
    print(f"| all | {n} | {caught} | {same} | {left} | {_share(caught, left)} |\n")
    for r in rows:
        if r["status"] == "survived":
            why = EQUIVALENT.get(r["text"].strip(), "NOT CAUGHT")
            print(f"- `{TARGETS[r['target']][0]}:{r['line']}` `{r['text'].strip()}`: {why}")


def _share(caught: int, left: int) -> str:
    return f"{100 * caught / (caught + left):.0f} %" if caught + left else "-"


if __name__ == "__main__":
    main()
