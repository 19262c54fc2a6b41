"""How big the memory is and how fast it grows: what `python -m hooks.memory status` adds to the backend's state.

Both backends answer the same questions through `UsageSql` (their own SQL for "how many rows", "how many since",
"the database's bytes"), so the figures read the same on SQLite and on a team's PostgreSQL (there, only what the
user may read is counted, as for search). Counting is by index: each project's rows since a time is a range of
its (project, created_at) index, never a scan of the table's rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DAY = 86_400.0
WINDOWS = {"1d": DAY, "7d": 7 * DAY, "30d": 30 * DAY}
TOP_PROJECTS = 10


@dataclass(frozen=True)
class UsageSql:
    """A backend's answers: `per_project()` -> {project: (observations, summaries, newest created_at)},
    `since(project, t)` -> observations and summaries of `project` created at or after t, `prompts()`,
    `vectors()` -> counts, `bytes()` -> the database's size on disk, `free_bytes()` -> of that, what the file keeps
    for reuse and `python -m hooks.memory compact` would give back (SQLite; None where the engine reuses space of
    its own accord, as PostgreSQL's vacuum does)."""

    per_project: Callable[[], dict[str, tuple[int, int, float | None]]]
    since: Callable[[str, float], int]
    prompts: Callable[[], int]
    vectors: Callable[[], int]
    bytes: Callable[[], int]
    free_bytes: Callable[[], int | None] = lambda: None


def usage(sql: UsageSql, now: float, iso: Callable[[float], str]) -> dict[str, Any]:
    """{bytes, items, growth, projects}: sizes, what was added in the last day / week / month (and the bytes a day
    that means at the store's present bytes per item), and the largest projects."""
    projects = sql.per_project()
    observations = sum(o for o, _, _ in projects.values())
    summaries = sum(s for _, s, _ in projects.values())
    prompts, vectors, size = sql.prompts(), sql.vectors(), sql.bytes()
    recent = {project: {name: sql.since(project, now - span) for name, span in WINDOWS.items()} for project in projects}
    added = {name: sum(counts[name] for counts in recent.values()) for name in WINDOWS}
    items = observations + summaries
    per_item = size / items if items else 0.0
    largest = sorted(projects.items(), key=lambda kv: (-kv[1][0] - kv[1][1], kv[0]))[:TOP_PROJECTS]
    free = sql.free_bytes()
    return {
        "bytes": size,
        **({"freeBytes": free} if free is not None else {}),
        "items": {"prompts": prompts, "observations": observations, "summaries": summaries, "vectors": vectors},
        "growth": {"observationsAndSummaries": added,
                   "bytesPerDay7d": round(per_item * added["7d"] / 7) if added["7d"] else 0},
        "projects": [{"project": name, "observations": o, "summaries": s, "added7d": recent[name]["7d"],
                      "newest": iso(newest) if newest is not None else None}
                     for name, (o, s, newest) in largest],
        "projectCount": len(projects),
    }
