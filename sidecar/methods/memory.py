"""memory/search and memory/status: search by words, by meaning or both over what the memory hooks stored, and how
much of it is embedded."""

from __future__ import annotations

from ipc import protocol as p
from sidecar.app import CallContext, SidecarApp
from sidecar.methods._services import session_manager


# Read your own writes, briefly: a search waits at most this long, in all, for the memory writes live sessions had
# queued when it came (each ~1 ms); what has not landed by then is left to land, and the answer says how much.
MEMORY_DRAIN_S = 1.0


def register(app: SidecarApp) -> None:
    from hooks.memory.backfill import JOB

    JOB.enable()  # this process is a sidecar: memory stored without vectors is embedded in the background

    @app.on_shutdown
    async def stop_backfill() -> None:
        import sys

        if "hooks.memory.backfill" in sys.modules:  # started only if memory was used
            import anyio.to_thread

            await anyio.to_thread.run_sync(sys.modules["hooks.memory.backfill"].JOB.stop)

    @app.method("memory/search")
    async def memory_search(params: p.MemorySearchParams, call: CallContext) -> dict:
        from hooks.memory.search import search_memory

        import asyncio

        manager = session_manager(app)
        # Read your own writes: the memory hooks record after the answer (hooks/runner.py drain); a search made
        # right after a prompt must find that prompt. All sessions at once, bounded: a backlog never holds a search.
        runners = [session.runner for session in manager.live_sessions()]
        if runners:
            await asyncio.gather(*(runner.drain(timeout=MEMORY_DRAIN_S) for runner in runners))
        pending = sum(runner.pending_after_answer() for runner in runners)
        data_dir = manager.settings.data_dir
        if params.mode != "text":
            from hooks.memory.backfill import JOB

            JOB.kick(data_dir)  # what was stored before search by meaning existed gets its vectors
        try:
            results = await search_memory(data_dir, params.query, project=params.project, limit=params.limit,
                                          mode=params.mode)
        except ValueError as exc:  # a project filter that names no folder and no project key
            from ipc.errors import InvalidParams

            raise InvalidParams(str(exc), data={"project": params.project}) from None
        return {"results": results, "pendingWrites": pending}

    @app.method("memory/status")
    async def memory_status(params: p.Empty, call: CallContext) -> dict:
        import anyio.to_thread

        from hooks.memory.backfill import JOB
        from hooks.memory.store import memory_exists, open_store

        data_dir = session_manager(app).settings.data_dir
        JOB.kick(data_dir)

        def read() -> dict:
            from hooks.memory.embedder import embedder_status

            if not memory_exists(data_dir):
                model = embedder_status()
                return {"backend": "sqlite", "up": True, "items": 0, "embedded": 0, "model": model.get("model"),
                        "meaningAvailable": model["available"], "reason": model.get("reason")}
            store = open_store(data_dir)
            base = store.status()
            out = {"backend": base["backend"], "up": bool(base.get("up"))}
            try:
                vectors = store.vector_status()
            except Exception as exc:  # a team database that is down answers what it can
                from hooks.memory.embedder import embedder_status

                model = embedder_status()
                return {**out, "meaningAvailable": model["available"], "reason": model.get("reason") or str(exc)}
            from hooks.memory.config import load_config
            from hooks.memory.prune import retention_status

            retention = retention_status(store, data_dir, load_config()) if out["up"] else None
            return {**out, "items": vectors["items"], "embedded": vectors["embedded"], "model": vectors["model"],
                    "meaningAvailable": vectors["available"], "reason": vectors.get("reason"), "retention": retention}

        result = await anyio.to_thread.run_sync(read)
        backfill = JOB.status(data_dir)
        result["backfill"] = {k: backfill.get(k) for k in ("state", "done", "left", "error")}
        return result

