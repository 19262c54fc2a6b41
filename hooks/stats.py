"""Which hooks are slow, which fail, which block: per-hook figures read back from the tracking files.

A session's own records (`<data>/sessions/<id>/events.jsonl`) answer for one session; the timing log
(`<data>/analytics/hook-timing.jsonl`, one line per execution with the project's hash) answers for a project or
for everything. Both are what the runner already writes, each with its rotated `.1` (hooks/tracking.py) read
first; nothing here writes.
"""

from __future__ import annotations

import math
import re
import time
from calendar import timegm
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hooks.paths import project_hash, validate_session_id
from hooks.tracking import read_rotated

_AGO = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(value: str | None, now: float | None = None) -> float | None:
    """`30m`, `2h`, `7d` (ago) or an ISO 8601 UTC time (`2026-11-23T10:00:00Z`) → epoch seconds."""
    if not value:
        return None
    now = time.time() if now is None else now
    ago = _AGO.match(value.strip())
    if ago:
        return now - float(ago.group(1)) * _UNIT_S[ago.group(2)]
    return _epoch(value.strip())


def _epoch(stamp: str) -> float:
    try:
        base = stamp.rstrip("Z").split(".")[0]
        fraction = float("0." + stamp.rstrip("Z").split(".")[1]) if "." in stamp else 0.0
        return timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S")) + fraction
    except (ValueError, IndexError):
        raise ValueError(f"not a time: {stamp!r} (use 30m, 2h, 7d or 2026-11-23T10:00:00Z)") from None


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    index = max(0, math.ceil(q * len(sorted_values)) - 1)
    return sorted_values[index]


@dataclass(slots=True)
class HookStats:
    name: str
    event: str
    durations: list[float] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)

    def add(self, record: dict[str, Any]) -> None:
        duration = record.get("durationMs")
        if isinstance(duration, (int, float)):
            self.durations.append(float(duration))
        outcome = str(record.get("outcome") or "unknown")
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    def to_wire(self) -> dict[str, Any]:
        ordered = sorted(self.durations)
        return {
            "name": self.name,
            "event": self.event,
            "runs": sum(self.outcomes.values()),
            "p50Ms": round(_percentile(ordered, 0.50), 3),
            "p95Ms": round(_percentile(ordered, 0.95), 3),
            "maxMs": round(ordered[-1], 3) if ordered else 0.0,
            "failures": self.outcomes.get("error", 0),
            "timeouts": self.outcomes.get("timeout", 0),
            "blocks": self.outcomes.get("blocked", 0),
            "cancelled": self.outcomes.get("cancelled", 0),
        }


def _records(data_dir: Path, session_id: str | None, project_dir: Path | None) -> Iterator[dict[str, Any]]:
    if session_id is not None:
        yield from read_rotated(data_dir / "sessions" / validate_session_id(session_id) / "events.jsonl")
        return
    wanted = project_hash(project_dir) if project_dir is not None else None
    for record in read_rotated(data_dir / "analytics" / "hook-timing.jsonl"):
        if wanted is None or record.get("project") == wanted:
            yield record


def hook_stats(data_dir: Path, *, session_id: str | None = None, project_dir: Path | None = None,
               since: float | None = None, until: float | None = None) -> list[dict[str, Any]]:
    """Per (hook, event): runs, p50/p95/max duration, failures, timeouts, blocks; slowest p95 first."""
    table: dict[tuple[str, str], HookStats] = {}
    for record in _records(Path(data_dir), session_id, project_dir):
        if since is not None or until is not None:
            try:
                ts = _epoch(str(record.get("ts")))
            except ValueError:
                continue
            if (since is not None and ts < since) or (until is not None and ts > until):
                continue
        key = (str(record.get("name")), str(record.get("event")))
        table.setdefault(key, HookStats(*key)).add(record)
    rows = [stats.to_wire() for stats in table.values()]
    return sorted(rows, key=lambda r: (-r["p95Ms"], r["name"], r["event"]))


def format_table(rows: Iterable[dict[str, Any]]) -> str:
    header = f"{'HOOK':<28} {'EVENT':<18} {'RUNS':>6} {'P50 MS':>9} {'P95 MS':>9} {'MAX MS':>9} {'FAIL':>5} {'TIMEOUT':>8} {'BLOCK':>6}"
    lines = [header]
    for r in rows:
        lines.append(f"{r['name'][:28]:<28} {r['event'][:18]:<18} {r['runs']:>6} {r['p50Ms']:>9.1f} {r['p95Ms']:>9.1f} "
                     f"{r['maxMs']:>9.1f} {r['failures']:>5} {r['timeouts']:>8} {r['blocks']:>6}")
    return "\n".join(lines)
