"""memory/search: full-text search over what the memory hooks stored."""

from __future__ import annotations

from ipc import protocol as p
from sidecar.app import CallContext, SidecarApp
from sidecar.methods._services import session_manager


def register(app: SidecarApp) -> None:
    @app.method("memory/search")
    async def memory_search(params: p.MemorySearchParams, call: CallContext) -> dict:
        from hooks.memory.search import search_memory

        data_dir = session_manager(app).settings.data_dir
        results = await search_memory(data_dir, params.query, project=params.project, limit=params.limit)
        return {"results": results}
