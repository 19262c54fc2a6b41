"""A memory writer process for the team-memory tests: sessions through the real HookRunner and built-in memory hooks, then searches.

`python -m tests.memory_writer <spec.json>`; spec: {project, sessions, word, searches: [query, ...]}.
It opens its store, prints "ready", and starts when a line arrives on stdin (so all writers start together). The environment says which database and who this is (ORION_MEMORY_URL, ORION_DATA_DIR,
ORION_USER_SETTINGS). Prints one JSON line: {"searches": {query: [hits]}, "status": store status}.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from hooks.builtin import builtin_registry
from hooks.hookset import load_hookset
from hooks.memory.search import search_memory
from hooks.memory.store import close_all_stores, open_store
from hooks.paths import data_dir
from hooks.runner import HookRunner
from hooks.types import SessionContext


async def _emit(event: str, payload: dict[str, Any]) -> None:
    return None


async def main(spec: dict[str, Any]) -> dict[str, Any]:
    project = Path(spec["project"])
    data = data_dir()
    await anyio.to_thread.run_sync(open_store, data)  # connect and migrate before the start line
    print("ready", flush=True)
    await anyio.to_thread.run_sync(sys.stdin.readline)
    runner = HookRunner(load_hookset(project, None, registry=builtin_registry(None, data_dir=data)), data_dir=data)
    try:
        for n in range(spec["sessions"]):
            sid = f"{spec['word']}-{n}"
            ctx = SessionContext(session_id=sid, project_dir=project, data_dir=data, emit=_emit)
            base = {"session_id": sid, "cwd": str(project), "transcript_path": ""}
            with anyio.fail_after(30):
                await runner.fire("SessionStart", {**base, "source": "startup"}, ctx)
                await runner.fire("UserPromptSubmit", {**base, "prompt": f"investigate {spec['word']} number {n} "
                                                                         "<private>pin 8812</private>"}, ctx)
                for t in range(3):
                    await runner.fire("PostToolUse", {**base, "tool_name": "Bash", "tool_use_id": f"t{t}",
                                                      "tool_input": {"command": f"grep {spec['word']} step{t}"},
                                                      "tool_response": {"stdout": f"{spec['word']} found in step{t}"}},
                                      ctx, tool_use_id=f"t{t}")
                await runner.fire("Stop", {**base, "stop_hook_active": False,
                                           "last_assistant_message": f"{spec['word']} fixed in session {n}"}, ctx)
                await runner.fire("SessionEnd", {**base, "reason": "other"}, ctx)
                await runner.drain()
    finally:
        await runner.aclose()
    searches = {q: await search_memory(data, q, limit=100, mode="text") for q in spec.get("searches", [])}
    status = open_store(data).status()
    close_all_stores()
    return {"searches": searches, "status": status}


if __name__ == "__main__":
    spec = json.loads(Path(sys.argv[1]).read_text())
    print(json.dumps(anyio.run(main, spec)))
