"""Every failed call and refused command of a run, by method and code. A refusal that is a
correct answer under the rules is counted apart from errors, with the rule that makes it
correct; the gateway's rate limit apart from both (it measures the limit, not the cluster);
anything else is an error and fails the run.

Users report each refusal through `refusal_entry`: a rule's answer as a success of an entry of
its own (so Locust's report does not show it as a failure), anything else as a failure whose
message is its code (`code_of`), which Locust's failures table then counts by method."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from wire.errors import error_from

# The refusals a client gets for acting as the rules say it may not, whatever the cluster's
# health: counted, never errors.
RULE_ANSWERS = {
    "STALE_SEQ": "the command was decided on a view the table had moved past (the other "
    "seat or a clock acted first): the client reads the new view and decides again",
    "WRONG_PHASE": "the command does not fit the phase the table is in now (the same race)",
    "NOT_YOUR_TURN": "the other seat decides now (the same race)",
    "TIME_UP": "I-40: the command reached the table at or after its deadline, by the store's "
    "clock: the timeout decides, as it would for a player whose move came too late",
    "IN_ANOTHER_MATCH": "W-1: one wagered match in play at a time; the client waits",
    "MATCH_OVER": "the match ended (a timeout, the away rule, the other seat's resignation) "
    "before the command arrived",
}
LIMITED = "RATE_LIMITED"  # the gateway's own limits (per player, per address)
RULE_KIND = "rule"  # Locust entries of rules' answers
CALLS = ("grpc", "cmd")  # Locust entries of calls and commands (their failures are errors)
LIMIT_KIND = "limited"  # Locust entries of rate-limit refusals


def code_of(exc: BaseException) -> str:
    """A failed call's code: its gRPC status and, when the cluster gave one, its typed code."""
    code = exc.code() if hasattr(exc, "code") and callable(exc.code) else None
    if code is None:
        return type(exc).__name__
    detail = error_from(exc) if hasattr(exc, "trailing_metadata") else None
    return f"{code.name} {detail.code}" if detail else code.name


def kind_of(code: str) -> str:
    """ "rule", "limited" or "error" for a code as `code_of` or a command error gives it."""
    last = code.rsplit(" ", 1)[-1]
    if last in RULE_ANSWERS:
        return RULE_KIND
    if last == LIMITED or code == "RESOURCE_EXHAUSTED":
        return LIMIT_KIND
    return "error"


def read_failures(csv_path: Path) -> list[dict[str, Any]]:
    """Locust's failures table (`--csv PREFIX` writes PREFIX_failures.csv)."""
    if not csv_path.exists():
        return []
    with csv_path.open() as f:
        return [
            {
                "method": r["Method"],
                "name": r["Name"],
                "code": r["Error"],
                "count": int(r["Occurrences"]),
            }
            for r in csv.DictReader(f)
        ]


def by_code(stats: list[dict[str, Any]], failures: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's refusals: `errors` (fail the run), `rules` (each with its rule), `limited`
    (the gateway's rate limit); each "<what> <code>": count."""
    out: dict[str, Any] = {"errors": {}, "rules": {}, "limited": {}}
    for f in failures:
        if f["method"] not in CALLS:
            continue  # a correctness counter's failure: the summary's checks
        what = f"{f['name'].rsplit('/', 1)[-1]} {f['code'].strip()}"
        bucket = out["limited"] if kind_of(f["code"]) == LIMIT_KIND else out["errors"]
        bucket[what] = bucket.get(what, 0) + f["count"]
    for s in stats:
        if s["method"] in (RULE_KIND, LIMIT_KIND):
            bucket = out["rules"] if s["method"] == RULE_KIND else out["limited"]
            bucket[s["name"]] = bucket.get(s["name"], 0) + s["num_requests"]
    out["rules_explained"] = {
        code: RULE_ANSWERS[code]
        for code in sorted({k.rsplit(" ", 1)[-1] for k in out["rules"]} & RULE_ANSWERS.keys())
    }
    return out
