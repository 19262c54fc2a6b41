"""`memory/search`: search of the memory store by words, by meaning or both, shaped as the JSON-RPC method returns it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio.to_thread

from hooks.memory.config import SHARED_PREFIX
from hooks.memory.identity import lookup_project
from hooks.memory.store import memory_exists, open_store

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


async def search_memory(
    data_dir: Path, query: str, *, project: str | None = None, limit: int = DEFAULT_LIMIT, mode: str = "hybrid"
) -> list[dict[str, Any]]:
    """`[{kind, sessionId, project, text, snippet, createdAt, score, why, matchedBy}]`, best first.

    `mode`: "text" ranks by words (FTS5, or Postgres' on a team database), "meaning" by the local embedding
    model (hooks/memory/embedder.py), "hybrid" fuses both (hooks/memory/ranking.py). `kind` is "prompt",
    "observation" or "summary"; `snippet` marks the matched words with « »; `createdAt` is ISO 8601 UTC;
    `project` is the project's id (hooks/memory/identity.py), and the `project` filter takes an id or the
    project's folder path; a bigger `score` is a better match. The words of a query are plain words (all
    required; FTS operators are not interpreted). An empty query or a missing database gives [].
    """
    limit = max(1, min(int(limit), MAX_LIMIT))
    check_project_filter(project)
    if not query.strip():
        return []

    def run() -> list[dict[str, Any]]:
        if not memory_exists(data_dir):
            return []
        store = open_store(data_dir)
        # Memory is keyed by project id (or the team name the user shared it under); a caller may name the folder.
        key = lookup_project(data_dir, project) if project else None
        if project and key and os.path.isabs(os.path.expanduser(project)):
            key = store.project_key(key, os.path.expanduser(project))
        return store.search(query, project=key, limit=limit, mode=mode)

    return await anyio.to_thread.run_sync(run)


def check_project_filter(project: str | None) -> None:
    """A `project` filter is the project's folder (an absolute path) or its key as memory files it (`proj_…`, or
    `team:<name>` for a project shared with the team). A bare name ("app") would match nothing, silently: two
    folders named app are two projects (docs/SECURITY.md, "Memory identity"), so it is refused with the reason."""
    if project is None or os.path.isabs(os.path.expanduser(project)):
        return
    if project.startswith(("proj_", SHARED_PREFIX)):
        return
    raise ValueError(f"memory/search 'project' must be the project's folder as an absolute path, or its id "
                     f"(proj_…) or shared name ({SHARED_PREFIX}…); {project!r} is neither (a folder's name alone "
                     "does not say which folder)")


async def memory_search_method(params: dict[str, Any], *, data_dir: Path) -> list[dict[str, Any]]:
    """The JSON-RPC handler body for `memory/search` {query, project?, limit?}."""
    query = params.get("query")
    if not isinstance(query, str):
        raise ValueError("memory/search needs a string 'query'")
    project = params.get("project")
    if project is not None and not isinstance(project, str):
        raise ValueError("memory/search 'project' must be a string when given")
    limit = params.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise ValueError("memory/search 'limit' must be an integer")
    mode = params.get("mode", "hybrid")
    if mode not in ("hybrid", "text", "meaning"):
        raise ValueError("memory/search 'mode' must be 'hybrid', 'text' or 'meaning'")
    return await search_memory(data_dir, query, project=project, limit=limit, mode=mode)
