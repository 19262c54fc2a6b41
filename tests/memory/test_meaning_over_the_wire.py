"""Search by meaning as a frontend sees it: `python -m sidecar`, memory stored before vectors existed, the
background backfill reported by `memory/status`, paraphrases found by `memory/search`, the same after a restart."""

from __future__ import annotations

from pathlib import Path

import json
import anyio
import pytest

import hooks.memory.store as store_module
from hooks.memory.identity import project_identity
from ipc.errors import RemoteError
from hooks.memory.store import MemoryStore
from tests.e2e.conftest import open_sidecar
from tests.memory.paraphrases import OBSERVATIONS, QUESTIONS

pytestmark = pytest.mark.asyncio


def store_without_vectors(data: Path, project: Path, monkeypatch, url: str | None = None) -> str:
    """What an older sidecar left: the memory, no vectors (in the SQLite file, or the team database at `url`)."""
    key = project_identity(data, project).id
    if url is None:
        monkeypatch.setattr(store_module, "get_embedder", lambda: None)
        store = MemoryStore(store_module.memory_db_path(data))
    else:
        import hooks.memory.pg_store as pg_module
        from hooks.memory.config import load_config

        monkeypatch.setattr(pg_module, "get_embedder", lambda: None)
        store = pg_module.PostgresMemoryStore(load_config({"ORION_MEMORY_URL": url}, data / "no-settings.json"), data)
    for n, (tool, text) in enumerate(OBSERVATIONS):
        store.add_observation(f"old-{n // 10}", key, n % 10 + 1, tool, text)
    store.add_observation("elsewhere", "proj_someone_else", 1, "Edit", "an unrelated note about gardening tomatoes")
    if url is not None:
        assert store.wait_flushed(10)
    store.close()
    monkeypatch.undo()
    return key


@pytest.fixture(params=["sqlite", "postgres"])
def backend_env(request, tmp_path: Path) -> dict[str, str]:
    """The sidecar's environment for each memory backend (PostgreSQL: a real server, tests/pg_server.py)."""
    env = {"ORION_DATA_DIR": str(tmp_path / "data")}
    if request.param == "postgres":
        env["ORION_MEMORY_URL"] = request.getfixturevalue("pg_server").create_database()
    return env


async def search_all(run, project: Path, mode: str) -> list[list[dict]]:
    return [(await run.request("memory/search", {"query": q, "project": str(project), "limit": 5, "mode": mode}))
            ["results"] for q, _ in QUESTIONS]


def hits(results: list[list[dict]]) -> int:
    return sum(any(r["text"] == OBSERVATIONS[answer][1] for r in found)
               for found, (_, answer) in zip(results, QUESTIONS))


async def test_memory_from_before_is_backfilled_and_found_by_meaning_after_a_restart(tmp_path: Path, monkeypatch,
                                                                                     backend_env) -> None:
    data, env = Path(backend_env["ORION_DATA_DIR"]), backend_env
    backend = "postgres" if "ORION_MEMORY_URL" in env else "sqlite"
    async with open_sidecar(tmp_path, "notes", trust=False, env=env) as run:
        project = run.project
        key = store_without_vectors(data, project, monkeypatch, env.get("ORION_MEMORY_URL"))
        status = await run.request("memory/status")
        assert status["backend"] == backend and status["meaningAvailable"] is True
        assert status["items"] == 31 and status["embedded"] == 0
        assert status["backfill"]["state"] in ("checking", "running", "done")
        with anyio.fail_after(120):
            while (status := await run.request("memory/status"))["backfill"]["state"] in ("checking", "running"):
                await anyio.sleep(0.2)
        assert status["backfill"] == {"state": "done", "done": 31, "left": 0, "error": None}
        assert status["embedded"] == 31 and status["model"].startswith("wordllama-")
        by_words = await search_all(run, project, "text")
        hybrid = await search_all(run, project, "hybrid")
        meaning = await search_all(run, project, "meaning")
    assert hits(by_words) == 0
    assert hits(hybrid) >= 12 and hits(meaning) >= 12
    # scope: another project's item is never a hit of this one's search, however near it is
    assert all(r["project"] == key for found in hybrid + meaning for r in found)
    assert all(r["matchedBy"] == ["meaning"] for found in meaning for r in found)

    async with open_sidecar(tmp_path / "again", "notes", trust=False, env=env) as run:
        assert (await run.request("memory/status"))["embedded"] == 31
        again = await search_all(run, project, "hybrid")
    assert again == hybrid


async def test_bad_search_params_get_a_specific_error_and_the_sidecar_goes_on(tmp_path: Path) -> None:
    async with open_sidecar(tmp_path, "notes", trust=False, env={"ORION_DATA_DIR": str(tmp_path / "data")}) as run:
        for params, named in (({"query": "x", "mode": "vibes"}, "mode"), ({"query": "x", "limit": 0}, "limit"),
                              ({"query": 3}, "query"), ({"mode": "meaning"}, "query"),
                              ({"query": "x", "project": "app"}, "project")):
            with pytest.raises(RemoteError) as bad:
                await run.request("memory/search", params)
            assert bad.value.code == -32602 and named in str(bad.value.data), (params, bad.value.data)
        # nothing stored yet: every mode answers empty, and the status says so
        for mode in ("hybrid", "text", "meaning"):
            assert (await run.request("memory/search", {"query": "anything", "mode": mode}))["results"] == []
        status = await run.request("memory/status")
        assert status["items"] == 0 and status["meaningAvailable"] is True
        assert (await run.request("ping")) == {}


@pytest.mark.cli
async def test_the_agent_reads_past_work_related_to_its_first_prompt_when_the_user_turned_it_on(
        tmp_path: Path, monkeypatch) -> None:
    """Through the real CLI: with `memory-related` on in the user's Orion settings, the model's first request
    carries the past observation that answers the prompt in other words; a project's settings cannot turn it on."""
    import json

    from tests.e2e.conftest import request_text, scenario_model

    data = tmp_path / "data"
    question, answer = QUESTIONS[6]  # "container killed, heap too big for its quota"
    wanted = OBSERVATIONS[answer][1].split("\n-> ")[1][:50]
    settings = tmp_path / "orion-user-settings.json"
    settings.write_text(json.dumps({"builtin": {"memory-related": {"enabled": True}}}))
    env = {"ORION_DATA_DIR": str(data), "ORION_USER_SETTINGS": str(settings)}
    async with open_sidecar(tmp_path, "notes", trust=False, env=env) as run:
        store_without_vectors(data, run.project, monkeypatch)
        store = MemoryStore(store_module.memory_db_path(data))
        store.backfill()
        store.close()
        session = await run.request("session/new", {"projectDir": str(run.project), "model": scenario_model("plain")},
                                    timeout=60.0)
        await run.prompt(session["sessionId"], question)
        project = run.project
    [first] = run.model_requests("plain")
    assert "related to this request" in request_text(first) and wanted in request_text(first)

    # the same project and memory, the switch in the project's own settings (trusted, even): ignored, with a warning
    (tmp_path / "off").mkdir()
    env_off = {"ORION_DATA_DIR": str(data)}
    async with open_sidecar(tmp_path / "off", "notes", trust=False, env=env_off) as run:
        (project / ".claude").mkdir()
        (project / ".claude" / "settings.json").write_text(
            json.dumps({"builtin": {"memory-related": {"enabled": True}}}))
        await run.trust(project)
        session = await run.request("session/new", {"projectDir": str(project), "model": scenario_model("plain")},
                                    timeout=60.0)
        await run.prompt(session["sessionId"], question)
    [first] = run.model_requests("plain")
    assert "related to this request" not in request_text(first)
    assert any("$.builtin: only Orion's user settings" in w for w in session["warnings"])


async def test_memory_status_over_the_wire_shows_the_users_retention_and_what_it_would_remove(
        tmp_path: Path, monkeypatch) -> None:
    """`memory/status` carries what `python -m hooks.memory status` shows of retention: the user's rule for the
    project and, before any pass ran, what it would remove now (a status call removes nothing)."""
    data = tmp_path / "data"
    settings = tmp_path / "orion-user.json"
    env = {"ORION_DATA_DIR": str(data), "ORION_USER_SETTINGS": str(settings)}
    async with open_sidecar(tmp_path, "notes", trust=False, env=env) as run:
        settings.write_text(json.dumps({"memory": {"retention": {"projects": {str(run.project): {
            "maxObservations": 10}}}}}))
        store_without_vectors(data, run.project, monkeypatch)
        status = await run.request("memory/status")
        again = await run.request("memory/status")
    retention = status["retention"]
    assert retention["inForce"] is True
    [limited] = retention["projects"]
    assert limited["wouldRemove"]["observations"] == 20  # 30 stored, the newest 10 kept
    assert again["items"] == status["items"] == 31  # nothing removed by looking (30 here, 1 elsewhere)
