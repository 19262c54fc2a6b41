"""What a memory write and a search cost does not grow with history: counted with SQLite's own counter (virtual
machine instructions, through the progress handler), not a timer, at 2k and at 20k observations."""

from __future__ import annotations

from pathlib import Path

import pytest

import hooks.memory.store as store_module
from hooks.memory.store import RANK_WINDOW, MemoryStore


class Steps:
    """Counts the VM instructions SQLite runs for the calls made inside `with`."""

    def __init__(self, store: MemoryStore) -> None:
        self.store, self.count = store, 0

    def _tick(self) -> int:
        self.count += 1
        return 0

    def _connections(self) -> list:
        with self.store._reading():  # full-text search reads through the store's second connection
            pass
        return [self.store._conn, self.store._reader]

    def __enter__(self) -> "Steps":
        for conn in self._connections():
            conn.set_progress_handler(self._tick, 1)
        return self

    def __exit__(self, *exc: object) -> None:
        for conn in self._connections():
            conn.set_progress_handler(None, 1)


def grown(tmp_path: Path, n: int, monkeypatch) -> MemoryStore:
    monkeypatch.setattr(store_module, "get_embedder", lambda: None)  # words only: the fill stays quick
    store = MemoryStore(tmp_path / f"m{n}.sqlite3")
    for i in range(n):
        project = "p-big" if i % 10 else "p-small"
        store.add_observation(f"s{i // 100}", project, 1, "Bash", f"the step {i} of the build ran the tests again")
    for i in range(RANK_WINDOW + n // 100):  # both sides over the ranking window in both stores
        store.add_prompt(f"s{i}", "p-big", 1, f"the request number {i}")
    monkeypatch.undo()
    return store


def costs(store: MemoryStore) -> dict[str, int]:
    out = {}
    for name, call in (
        ("add_prompt", lambda: store.add_prompt("new", "p-big", 1, "the new prompt")),
        ("replace_prompt", lambda: store.add_prompt("new", "p-big", 1, "the new prompt, edited")),
        ("upsert_summary", lambda: store.upsert_summary("new", "p-big", 1, "Request: x", "Outcome: the y")),
        ("add_observation", lambda: store.add_observation("new", "p-big", 1, "Bash", "the z")),
        ("common_word", lambda: store.search("the", project="p-big", limit=10, mode="text")),
        ("common_word_small_project", lambda: store.search("the tests", project="p-small", limit=10, mode="text")),
        ("common_word_everywhere", lambda: store.search("the", limit=10, mode="text")),
        ("context", lambda: store.recent_context("p-big", exclude_session="now", summaries=3, observations=8)),
    ):
        with Steps(store) as steps:
            call()
        out[name] = steps.count
    return out


@pytest.mark.timeout(300)
def test_writes_and_searches_cost_the_same_at_ten_times_the_history(tmp_path: Path, monkeypatch) -> None:
    small, large = grown(tmp_path, 2 * RANK_WINDOW, monkeypatch), grown(tmp_path, 20 * RANK_WINDOW, monkeypatch)
    before, after = costs(small), costs(large)
    assert min(before.values()) > 0, before  # every call is counted (a search on a connection not watched is not)
    for name, steps in before.items():
        if name == "common_word_small_project":
            continue  # its matches grow with it (400 -> 4000) until the window bounds them: checked below
        # B-tree depth grows by a level at most: within half again, where a scan would cost ten times
        assert after[name] <= 1.5 * steps + 200, (name, before[name], after[name], before, after)
    # a project's search reads its own matches (the scope token), never the rest of the memory's
    assert after["common_word_small_project"] <= 1.5 * after["common_word"], after
    # and the bounded ranking still answers: the newest matches, best first
    hits = large.search("the", project="p-big", limit=10, mode="text")
    assert len(hits) == 10 and all(h["project"] == "p-big" for h in hits)
    assert large.search("tests again", project="p-small", limit=5, mode="text")[0]["project"] == "p-small"
