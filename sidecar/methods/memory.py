"""memory/search: full-text search over what the memory hooks stored."""

from __future__ import annotations

from ipc import protocol as p
from sidecar.app import CallContext, SidecarApp
from sidecar.methods._services import session_manager


MEMORY_DRAIN_S = 10.0  # at most this long a search waits for pending memory writes of live sessions


def register(app: SidecarApp) -> None:
    @app.method("memory/search")
    async def memory_search(params: p.MemorySearchParams, call: CallContext) -> dict:
        from hooks.memory.search import search_memory

        manager = session_manager(app)
        # Read your own writes: the memory hooks record after the answer (hooks/runner.py drain); a search made
        # right after a prompt must find that prompt.
        for session in manager.live_sessions():
            await session.runner.drain(timeout=MEMORY_DRAIN_S)
        data_dir = manager.settings.data_dir
        results = await search_memory(data_dir, params.query, project=params.project, limit=params.limit)
        return {"results": results}
