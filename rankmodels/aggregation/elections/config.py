"""RCTab contest configs (``*_config.json``): the rules, the candidates and the records.

Every key RCTab documents is read; a key this package does not know, or a value it does
not support (an interactive tie-break, a provider without a reader), raises
:class:`~rankmodels.errors.InputError` naming the key. Keys that only ask RCTab for extra
output files (``tabulateByPrecinct``, ``tabulateByBatch``, ``generateCdfJson``,
``outputDirectory``) are read and do not change the count.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from rankmodels.aggregation.elections.jsonfile import read_json_object
from rankmodels.aggregation.elections.rules import Rules
from rankmodels.errors import InputError

__all__ = ["PROVIDERS", "Candidate", "Contest", "Source", "read_config"]

PROVIDERS = ("ess", "cdf", "dominion", "clearBallot", "hart", "genericCsv")
"""CVR providers with a reader (RCTab's names)."""

_TOP = {"tabulatorVersion", "outputSettings", "cvrFileSources", "candidates", "rules"}
_OUTPUT = {
    "contestName",
    "outputDirectory",
    "contestDate",
    "contestJurisdiction",
    "contestOffice",
    "tabulateByPrecinct",
    "tabulateByBatch",
    "generateCdfJson",
}
_SOURCE = {
    "filePath",
    "contestId",
    "firstVoteColumnIndex",
    "firstVoteRowIndex",
    "idColumnIndex",
    "batchColumnIndex",
    "precinctColumnIndex",
    "overvoteDelimiter",
    "provider",
    "overvoteLabel",
    "skippedRankLabel",
    "undervoteLabel",
    "undeclaredWriteInLabel",
    "treatBlankAsUndeclaredWriteIn",
}
_CANDIDATE = {"name", "code", "aliases", "excluded"}
_RULES = {
    "tiebreakMode",
    "overvoteRule",
    "winnerElectionMode",
    "randomSeed",
    "numberOfWinners",
    "multiSeatBottomsUpPercentageThreshold",
    "decimalPlacesForVoteArithmetic",
    "minimumVoteThreshold",
    "maxSkippedRanksAllowed",
    "maxRankingsAllowed",
    "nonIntegerWinningThreshold",
    "doesFirstRoundDetermineThreshold",
    "hareQuota",
    "batchElimination",
    "continueUntilTwoCandidatesRemain",
    "stopTabulationEarlyAfterRound",
    "exhaustOnDuplicateCandidate",
    "rulesDescription",
    "treatBlankAsUndeclaredWriteIn",
    "overvoteLabel",
    "skippedRankLabel",
    "undeclaredWriteInLabel",
}
_TIEBREAKS = {
    "random": "random",
    "previousRoundCountsThenRandom": "previous-rounds-then-random",
    "useCandidateOrder": "candidate-order",
    "generatePermutation": "permutation",
    "stopCountingAndAsk": "ask",
    "previousRoundCountsThenAsk": "previous-rounds-then-ask",
}
_OVERVOTES = {
    "exhaustImmediately": "exhaust",
    "alwaysSkipToNextRank": "skip",
    "exhaustIfMultipleContinuing": "exhaust-if-multiple",
}
_MODES = {
    "singleWinnerMajority": "single",
    "multiWinnerAllowMultipleWinnersPerRound": "multi-seat",
    "multiWinnerAllowOnlyOneWinnerPerRound": "multi-seat-one-per-round",
    "bottomsUp": "bottoms-up",
    "bottomsUpUsingPercentageThreshold": "bottoms-up-threshold",
    "multiPassIrv": "sequential",
}


@dataclass(frozen=True)
class Candidate:
    """A declared candidate: ``name``, other spellings in the records (``aliases``, the
    config's ``code`` among them) and whether it is ``excluded`` from the count."""

    name: str
    aliases: tuple[str, ...] = ()
    excluded: bool = False


@dataclass(frozen=True)
class Source:
    """One cast-vote-record file and how to read it (RCTab's ``cvrFileSources`` item;
    column and row indices count from 1)."""

    path: Path
    provider: str
    contest_id: str = ""
    first_vote_column: int | None = None
    first_vote_row: int | None = None
    id_column: int | None = None
    precinct_column: int | None = None
    overvote_delimiter: str = ""
    overvote_label: str = ""
    undervote_label: str = ""
    write_in_label: str = ""
    blank_is_write_in: bool = False


@dataclass(frozen=True)
class Contest:
    """A config: ``name`` and the other ``info`` of ``outputSettings`` (date,
    jurisdiction, office), the ``candidates`` in config order, the ``sources`` and the
    ``rules``."""

    name: str
    info: dict[str, str]
    candidates: tuple[Candidate, ...]
    sources: tuple[Source, ...]
    rules: Rules

    @property
    def write_ins(self) -> bool:
        """Whether any source counts undeclared write-ins."""
        return any(s.write_in_label or s.blank_is_write_in for s in self.sources)


def read_config(path: str | os.PathLike[str]) -> Contest:
    """Read the RCTab config at ``path`` (record paths relative to its folder)."""
    path = Path(path)
    raw = read_json_object(path, "a JSON config")
    reader = _Reader(path)
    return reader.contest(reader.object(raw, "the config", _TOP))


class _Reader:
    """Reads one config, naming the key of every problem."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, key: str, message: str) -> InputError:
        return InputError(message, path=self.path, field=key)

    def object(self, value: Any, where: str, known: set[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, "expected a JSON object")
        for key in value:
            if key not in known:
                raise self.fail(
                    f"{where}.{key}" if where != "the config" else key,
                    "unknown key (not supported)",
                )
        return value

    def text(self, value: Any, key: str) -> str:
        if value is None:
            return ""
        if not isinstance(value, str | int):
            raise self.fail(key, f"expected text, got {value!r}")
        return str(value).strip()

    def integer(
        self,
        value: Any,
        key: str,
        low: int,
        allow: dict[str, int | None] | None = None,
        default: int | None = None,
    ) -> int | None:
        text = self.text(value, key)
        if not text:
            return default
        if allow and text.lower() in allow:
            return allow[text.lower()]
        try:
            number = int(text)
        except ValueError:
            raise self.fail(key, f"expected an integer, got {text!r}") from None
        if number < low:
            raise self.fail(key, f"must be at least {low}, got {number}")
        return number

    def flag(self, value: Any, key: str) -> bool:
        if value is None or value == "":
            return False
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise self.fail(key, f"expected true or false, got {value!r}")

    def choice(self, value: Any, key: str, table: dict[str, str]) -> str:
        text = self.text(value, key)
        if text not in table:
            raise self.fail(key, f"{text!r} is not supported (supported: {', '.join(table)})")
        return table[text]

    def contest(self, raw: dict[str, Any]) -> Contest:
        output = self.object(raw.get("outputSettings", {}), "outputSettings", _OUTPUT)
        name = self.text(output.get("contestName"), "outputSettings.contestName")
        info = {
            k: self.text(output.get(f"contest{k.title()}"), f"outputSettings.contest{k.title()}")
            for k in ("date", "jurisdiction", "office")
        }
        candidates = tuple(self.candidate(c, i) for i, c in enumerate(raw.get("candidates") or []))
        names = [c.name for c in candidates]
        if len(set(names)) != len(names):
            raise self.fail("candidates", "candidate names must be distinct")
        sources_raw = raw.get("cvrFileSources") or []
        if not isinstance(sources_raw, list) or not sources_raw:
            raise self.fail("cvrFileSources", "expected a non-empty list of records")
        rules_raw = self.object(raw.get("rules", {}), "rules", _RULES)
        sources = tuple(self.source(s, i, rules_raw) for i, s in enumerate(sources_raw))
        return Contest(name, info, candidates, sources, self.rules(rules_raw, candidates))

    def candidate(self, raw: Any, i: int) -> Candidate:
        where = f"candidates[{i}]"
        raw = self.object(raw, where, _CANDIDATE)
        name = self.text(raw.get("name"), f"{where}.name")
        if not name:
            raise self.fail(f"{where}.name", "a candidate needs a name")
        aliases = raw.get("aliases") or []
        if not isinstance(aliases, list):
            raise self.fail(f"{where}.aliases", "expected a list of names")
        code = self.text(raw.get("code"), f"{where}.code")
        spelled = [self.text(a, f"{where}.aliases") for a in aliases] + ([code] if code else [])
        return Candidate(
            name,
            tuple(a for a in spelled if a),
            self.flag(raw.get("excluded"), f"{where}.excluded"),
        )

    def source(self, raw: Any, i: int, rules: dict[str, Any]) -> Source:
        where = f"cvrFileSources[{i}]"
        raw = self.object(raw, where, _SOURCE)

        def get(key: str) -> Any:  # old configs keep the labels among the rules
            return raw.get(key, rules.get(key))

        provider = self.text(raw.get("provider"), f"{where}.provider")
        if provider not in PROVIDERS:
            raise self.fail(
                f"{where}.provider",
                f"provider {provider!r} is not supported (supported: {', '.join(PROVIDERS)})",
            )
        file_path = self.text(raw.get("filePath"), f"{where}.filePath")
        if not file_path:
            raise self.fail(f"{where}.filePath", "a record needs a filePath")
        path = (self.path.parent / file_path).resolve()
        if not path.exists():
            raise self.fail(f"{where}.filePath", f"no such file: {path}")
        column = f"{where}.firstVoteColumnIndex"
        return Source(
            path=path,
            provider=provider,
            contest_id=self.text(raw.get("contestId"), f"{where}.contestId"),
            first_vote_column=self.integer(raw.get("firstVoteColumnIndex"), column, 1),
            first_vote_row=self.integer(
                raw.get("firstVoteRowIndex"), f"{where}.firstVoteRowIndex", 1
            ),
            id_column=self.integer(raw.get("idColumnIndex"), f"{where}.idColumnIndex", 1),
            precinct_column=self.integer(
                raw.get("precinctColumnIndex"), f"{where}.precinctColumnIndex", 1
            ),
            overvote_delimiter=self.text(
                raw.get("overvoteDelimiter"), f"{where}.overvoteDelimiter"
            ),
            overvote_label=self.text(get("overvoteLabel"), f"{where}.overvoteLabel"),
            undervote_label=self.text(
                get("skippedRankLabel") or get("undervoteLabel"), f"{where}.skippedRankLabel"
            ),
            write_in_label=self.text(
                get("undeclaredWriteInLabel"), f"{where}.undeclaredWriteInLabel"
            ),
            blank_is_write_in=self.flag(
                get("treatBlankAsUndeclaredWriteIn"), f"{where}.treatBlankAsUndeclaredWriteIn"
            ),
        )

    def rules(self, raw: dict[str, Any], candidates: tuple[Candidate, ...]) -> Rules:
        def key(name: str) -> str:
            return f"rules.{name}"

        tiebreak = self.choice(raw.get("tiebreakMode"), key("tiebreakMode"), _TIEBREAKS)
        seed = self.integer(raw.get("randomSeed"), key("randomSeed"), -(2**47), default=None)
        if seed is None and tiebreak in ("random", "previous-rounds-then-random", "permutation"):
            raise self.fail(key("randomSeed"), f"tiebreakMode {tiebreak} needs a randomSeed")
        percentage = self.text(
            raw.get("multiSeatBottomsUpPercentageThreshold"),
            key("multiSeatBottomsUpPercentageThreshold"),
        )
        minimum = self.text(raw.get("minimumVoteThreshold"), key("minimumVoteThreshold"))
        try:
            minimum_value = Decimal(minimum or 0)
            percentage_value = Decimal(percentage) if percentage else None
        except InvalidOperation:
            raise self.fail(key("minimumVoteThreshold"), "expected a number") from None
        values = dict(
            seats=self.integer(raw.get("numberOfWinners"), key("numberOfWinners"), 0, default=1),
            mode=self.choice(raw.get("winnerElectionMode"), key("winnerElectionMode"), _MODES),
            overvote=self.choice(raw.get("overvoteRule"), key("overvoteRule"), _OVERVOTES),
            max_skipped_ranks=self.integer(
                raw.get("maxSkippedRanksAllowed"),
                key("maxSkippedRanksAllowed"),
                0,
                allow={"unlimited": None},
            ),
            max_rankings=self.integer(
                raw.get("maxRankingsAllowed"), key("maxRankingsAllowed"), 1, allow={"max": None}
            ),
            exhaust_on_duplicate=self.flag(
                raw.get("exhaustOnDuplicateCandidate"), key("exhaustOnDuplicateCandidate")
            ),
            batch_elimination=self.flag(raw.get("batchElimination"), key("batchElimination")),
            continue_until_two=self.flag(
                raw.get("continueUntilTwoCandidatesRemain"), key("continueUntilTwoCandidatesRemain")
            ),
            minimum_vote_threshold=minimum_value,
            decimal_places=self.integer(
                raw.get("decimalPlacesForVoteArithmetic"),
                key("decimalPlacesForVoteArithmetic"),
                1,
                default=4,
            ),
            non_integer_threshold=self.flag(
                raw.get("nonIntegerWinningThreshold"), key("nonIntegerWinningThreshold")
            ),
            hare_quota=self.flag(raw.get("hareQuota"), key("hareQuota")),
            first_round_determines_threshold=self.flag(
                raw.get("doesFirstRoundDetermineThreshold"),
                key("doesFirstRoundDetermineThreshold"),
            ),
            bottoms_up_percentage=percentage_value,
            stop_after_round=self.integer(
                raw.get("stopTabulationEarlyAfterRound"), key("stopTabulationEarlyAfterRound"), 1
            ),
            tiebreak=tiebreak,
            seed=seed or 0,
            excluded=frozenset(c.name for c in candidates if c.excluded),
        )
        try:
            return Rules(**values)
        except ValueError as err:
            raise self.fail("rules", str(err)) from None
