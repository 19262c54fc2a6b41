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
    from hooks.memory import fts_window

    small, large = grown(tmp_path, 2 * RANK_WINDOW, monkeypatch), grown(tmp_path, 20 * RANK_WINDOW, monkeypatch)
    # the search plan's samples and budget scaled to these memories (hooks/memory/fts_window.py: 2,000 and 50,000
    # at a million rows), so that both sizes are past them, as a grown memory is
    monkeypatch.setattr(fts_window, "SAMPLE", 200)
    monkeypatch.setattr(fts_window, "PLAIN_WALK", 100)
    monkeypatch.setattr(fts_window, "WALK_BUDGET", 2_000)
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


def read_bytes() -> int:
    """Bytes this process has read through read(2) and pread(2) (/proc/self/io's rchar): with a four-page cache,
    every page of the memory file a query touches is read again, including the pages FTS5 walks inside one step of
    SQLite's virtual machine (which the progress handler above never sees)."""
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("rchar"))


def never_together(tmp_path: Path, n: int, monkeypatch) -> MemoryStore:
    """n observation rows where `alpha` and `beta` alternate, each in half of them, never in the same one; written
    straight into the full-text table in one transaction and merged into one segment (FTS5's `optimize`), so that the
    two sizes differ only in history."""
    monkeypatch.setattr(store_module, "get_embedder", lambda: None)
    store = MemoryStore(tmp_path / f"never{n}.sqlite3")
    token = store_module.scope_token("p")

    def fill(conn) -> None:
        conn.executemany(
            "INSERT INTO memory_fts (rowid, text, kind, ref_id, session_id, project, created_at, scope)"
            " VALUES (?, ?, 'observation', ?, 's', 'p', ?, ?)",
            ((i, f"step {i} {'alpha' if i % 2 else 'beta'} ran", i, float(i), token) for i in range(1, n + 1)))
        conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")

    store._write(fill)
    return store


@pytest.mark.timeout(300)
@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts the bytes read through /proc/self/io")
@pytest.mark.parametrize("project", [None, "p"])
def test_words_never_together_cost_what_they_cost_in_a_small_memory(tmp_path: Path, monkeypatch,
                                                                      project: str | None) -> None:
    from hooks.memory import fts_window

    # the plan's budget scaled to the test's memories (50,000 list entries at a million rows)
    monkeypatch.setattr(fts_window, "WALK_BUDGET", 2_000)
    monkeypatch.setattr(fts_window, "SAMPLE", 200)
    monkeypatch.setattr(fts_window, "PLAIN_WALK", 500)
    cost: dict[tuple[int, str], int] = {}
    for n in (20_000, 400_000):
        store = never_together(tmp_path, n, monkeypatch)
        words = '"alpha" "beta"'
        match = words if project is None else f'scope : "{store_module.scope_token(project)}" AND {words}'
        with store._reading() as conn:
            conn.execute("PRAGMA cache_size = 4")

            def plain() -> None:  # what the store ran before the plan: each side's window, as FTS5 walks it
                conn.execute("SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? AND rowid > 0"
                             " ORDER BY rowid DESC LIMIT 500", (match,)).fetchall()
                conn.execute("SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? AND rowid < 0"
                             " ORDER BY rowid ASC LIMIT 500", (match,)).fetchall()

        for name, call in (("planned", lambda: store._text_hits("alpha beta", project, 10)), ("plain", plain)):
            call()  # the schema and the file's first pages, read once by any first query
            before = read_bytes()
            assert call() in ([], None)
            cost[(n, name)] = read_bytes() - before
        store.close()
    # FTS5 walks both lists to their ends to find that nothing matches: 20 times the history, ~20 times the bytes
    assert cost[(400_000, "plain")] >= 10 * cost[(20_000, "plain")], cost
    # the plan reads a bounded share of them; what grows is each list's lookup (its doclist index: a few pages)
    assert cost[(400_000, "planned")] <= 3 * cost[(20_000, "planned")], cost
    assert cost[(400_000, "planned")] * 4 <= cost[(400_000, "plain")], cost
