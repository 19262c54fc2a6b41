"""What a retention rule removes from one project, in terms both stores share: the cut, and the count of what went.

A rule (hooks/memory/config.py `RetentionRule`) becomes one `Cut`, a point in the project's (created_at, id) order:
- observations before it go (an age limit's cut is its instant; a size limit's is the oldest observation it keeps,
  so the newest `maxObservations` stay, ties at one instant broken by id);
- prompts and summaries created before its instant go (they belong to the history older than what is kept);
- a session left with no prompt, observation or summary, and not updated since before that instant, goes.
When both limits are set, the later cut wins (whichever removes more). The stores delete in batches of at most
`PRUNE_BATCH` rows per transaction (hooks/memory/store.py, pg_store.py), through every index.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from hooks.memory.config import RetentionRule
from hooks.memory.embedder import CODE_BYTES, DIM

DAY = 86_400.0
PRUNE_BATCH = 500  # rows per prune transaction: a memory write waits for one such batch at most
VECTOR_BYTES = DIM * 2 + CODE_BYTES  # an item's float16 vector and its code


@dataclass(frozen=True, slots=True)
class Cut:
    """Observations strictly before (at, id) go; prompts, summaries and emptied sessions strictly before `at`."""

    at: float
    id: int = 0  # 0: nothing at the instant itself (ids count from 1)


def cut_of(rule: RetentionRule, now: float, nth_newest: Callable[[int], tuple[float, int] | None]) -> Cut | None:
    """The rule's cut at `now`; `nth_newest(n)` is the project's n-th newest observation as (created_at, id), None
    when it has fewer. None: the rule removes nothing."""
    cuts: list[Cut] = []
    if rule.max_age_days is not None:
        cuts.append(Cut(now - rule.max_age_days * DAY))
    if rule.max_observations is not None:
        kept = nth_newest(rule.max_observations)
        if kept is not None:
            cuts.append(Cut(float(kept[0]), int(kept[1])))
    return max(cuts, key=lambda c: (c.at, c.id)) if cuts else None


@dataclass(slots=True)
class Removed:
    """What a prune removed (or, previewed, would remove): rows per kind, vectors, and bytes (the rows' texts and
    the vectors; a SQLite file keeps its size and reuses the pages, `VACUUM` gives them back)."""

    observations: int = 0
    prompts: int = 0
    summaries: int = 0
    sessions: int = 0
    vectors: int = 0
    bytes: int = 0

    def add(self, other: Removed) -> Removed:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}
