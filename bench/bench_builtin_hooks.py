"""Built-in hook benchmarks: what the Orion set adds per event through the real HookRunner, and the memory store's costs.

Run: .venv/bin/python bench/bench_builtin_hooks.py [N]   (from the repository root; offline, temp dirs only)
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hooks.builtin import BUILTIN_HOOK_NAMES, builtin_registry  # noqa: E402
from hooks.hookset import load_hookset  # noqa: E402
from hooks.memory.store import close_all_stores, open_store  # noqa: E402
from hooks.memory.tags import strip_tags  # noqa: E402
from hooks.redaction import redact  # noqa: E402
from hooks.runner import HookRunner  # noqa: E402
from hooks.types import SessionContext  # noqa: E402


def fmt(samples: list[float]) -> str:
    samples = sorted(samples)
    p95 = samples[int(len(samples) * 0.95) - 1]
    return f"median {statistics.median(samples) * 1e3:7.3f} ms   p95 {p95 * 1e3:7.3f} ms"


async def time_fire(runner: HookRunner, session: SessionContext, event: str, payload: dict, n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        await runner.fire(event, payload, session)
        out.append(time.perf_counter() - start)
    return out


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project, vault, data = root / "project", root / "vault", root / "data"
        for d in (project, vault / "Projects" / "Apollo", data):
            d.mkdir(parents=True)
        (project / "README.md").write_text("# Readme\n" + "Plain documentation text.\n" * 200)
        session = SessionContext(session_id="bench", project_dir=project, vault_dir=vault, data_dir=data)
        cases = [
            ("PreToolUse Bash (env-isolation + protection)", "PreToolUse",
             {"tool_name": "Bash", "tool_input": {"command": "git status && npm test 2>&1 | tee out.log"}}),
            ("PreToolUse Write (protection)", "PreToolUse",
             {"tool_name": "Write", "tool_input": {"file_path": "src/app.py", "content": "x"}}),
            ("PreToolUse Read .md (document-guard, 2 KiB read)", "PreToolUse",
             {"tool_name": "Read", "tool_input": {"file_path": str(project / "README.md")}}),
            ("UserPromptSubmit (autodetect, keywords, memory-session)", "UserPromptSubmit",
             {"prompt": "plan the apollo launch checklist"}),
            ("PostToolUse Read 8 KiB (secret-redaction, memory-observe)", "PostToolUse",
             {"tool_name": "Read", "tool_input": {"file_path": "a.py"}, "tool_response": "def f():\n    pass\n" * 450}),
            ("Stop (turn-activity, memory-summary)", "Stop",
             {"stop_hook_active": False, "last_assistant_message": "Done. All tests pass."}),
        ]
        all_off = {name: {"enabled": False} for name in BUILTIN_HOOK_NAMES}
        empty = HookRunner(load_hookset(project, vault, registry=builtin_registry(all_off, data_dir=data)), data_dir=data)
        runner = HookRunner(load_hookset(project, vault, registry=builtin_registry(data_dir=data)), data_dir=data)
        print(f"fire() through the HookRunner, N={n} each")
        base = await time_fire(empty, session, "PreToolUse", cases[0][2], n)
        print(f"  {'no hooks (runner floor)':58s} {fmt(base)}")
        for label, event, payload in cases:
            await time_fire(runner, session, event, payload, 5)  # warm-up (store open, caches)
            print(f"  {label:58s} {fmt(await time_fire(runner, session, event, payload, n))}")
        await runner.aclose()
        await empty.aclose()

        store = open_store(data)
        for i in range(10_000):
            if i % 1000 == 0:
                store.begin_prompt(f"s{i // 1000}", "project")
            store.add_observation(f"s{i // 1000}", "project", 1, "Bash", f"ran pytest case number {i} with token check")
        samples = []
        for _ in range(n):
            start = time.perf_counter()
            store.search("pytest token", limit=20)
            samples.append(time.perf_counter() - start)
        print(f"memory search, 10k observations, limit 20:{'':19s}{fmt(samples)}")
        close_all_stores()

    big = ("normal text <private>hidden</private> and sk-ant-api03-" + "a" * 30 + " more\n") * 12_000
    start = time.perf_counter()
    strip_tags(big)
    t_strip = time.perf_counter() - start
    start = time.perf_counter()
    redact(big)
    t_redact = time.perf_counter() - start
    print(f"strip_tags on {len(big) / 1e6:.1f} MB: {t_strip * 1e3:.1f} ms   redact on the same: {t_redact * 1e3:.1f} ms")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 300))
