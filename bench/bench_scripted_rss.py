"""The sidecar's resident memory over a long offline session on the in-process scripted model.

Run (from the repository root; offline, 127.0.0.1 only, the real CLI):

    .venv/bin/python bench/bench_scripted_rss.py [--prompts 500] [--sessions 300] [--sample-every 50] [--external]

Launches ``python -m sidecar`` through frontend_stub's SidecarClient, then

1. one session (``scripted:<scenario>``) answering ``--prompts`` prompts one after another, and
2. ``--sessions`` sessions started, sent one prompt and ended, one after another,

sampling the sidecar process's RSS (psutil; the sidecar alone, not its CLIs) at the start, every
``--sample-every`` prompts / sessions and at the end. Prints a table and one JSON line.

RSS is also split into anonymous memory (the Python heap: what a request log holds) and file-backed pages
(mapped libraries and files, e.g. the memory hooks' memory-mapped embedding model), from /proc/<pid>/status.
``--tracemalloc FRAMES`` runs the sidecar through bench/load_sessions.py's ``serve-sidecar`` wrapper with tracemalloc
on and prints the largest live allocation sites after each phase (slower; for finding what grows, not for figures).

``--external`` is the control: the same scenario served by a separate ``python -m sidecar.scripted_model``
process, the sessions using it as a "real" model (ANTHROPIC_BASE_URL), so the sidecar hosts no model server.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PROMPT_TIMEOUT_S = 120.0

# Text answers only: a prompt is one main-loop request (the whole conversation so far, resent) plus whatever
# side requests the CLI makes. The answer is a few hundred bytes, as a short chat answer would be.
SCENARIO: dict[str, Any] = {
    "name": "rss-chat",
    "description": "bench/bench_scripted_rss.py: every prompt gets a short text answer.",
    "text_chunk": 256,
    "turns": ["First answer: " + "lorem ipsum dolor sit amet " * 10],
    "default": "Another answer: " + "consectetur adipiscing elit " * 10,
    "side_reply": "RSS bench",
}


@dataclass(slots=True)
class Sample:
    phase: str  # "start", "session" (one long session), "sessions" (many short ones), "end"
    done: int  # prompts (session phase) or sessions (sessions phase) finished when sampled
    rss_mib: float
    at_s: float
    anon_mib: float = 0.0  # RssAnon
    file_mib: float = 0.0  # RssFile


@dataclass(slots=True)
class Report:
    prompts: int
    sessions: int
    external: bool
    samples: list[Sample] = field(default_factory=list)
    prompt_errors: list[str] = field(default_factory=list)
    stop_reasons: dict[str, int] = field(default_factory=dict)
    wall_s: float = 0.0
    peak_mib: float | None = None
    sidecar_exit: int | None = None
    loadavg: str = ""
    memory_top: dict[str, Any] = field(default_factory=dict)  # phase -> bench/memory_top result (--tracemalloc)


def rss_mib(pid: int) -> float:
    import psutil

    return psutil.Process(pid).memory_info().rss / 2**20


def rss_split_mib(pid: int) -> tuple[float, float]:
    """(RssAnon, RssFile) in MiB."""
    fields = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("RssAnon", "RssFile"):
                fields[name] = int(value.split()[0]) / 1024
    except OSError:
        pass
    return fields.get("RssAnon", 0.0), fields.get("RssFile", 0.0)


def peak_mib(pid: int) -> float | None:
    """VmHWM, the kernel's record of the peak resident set."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def sidecar_env(root: Path) -> dict[str, str]:
    """An isolated HOME, data dir and user settings under `root`, no API key."""
    env = dict(os.environ)
    env["ORION_DATA_DIR"] = str(root / "data")
    env["ORION_USER_SETTINGS"] = str(root / "no-user-settings.json")
    env["ORION_CLAUDE_USER_SETTINGS"] = str(root / "no-claude-user-settings.json")
    env["HOME"] = str(root / "home")
    Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ORION_SCRIPTED_LOG_DIR"):
        env.pop(name, None)
    return env


def start_external_model(scenario: Path) -> tuple[subprocess.Popen[bytes], str]:
    proc = subprocess.Popen([sys.executable, "-m", "sidecar.scripted_model", str(scenario)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    url = proc.stdout.readline().decode().strip()
    if not url.startswith("http"):
        proc.kill()
        raise RuntimeError("the external scripted model did not print its URL")
    return proc, url


async def run(prompts: int, sessions: int, every: int, workdir: Path, *, external: bool, progress: bool,
              tracemalloc_frames: int = 0) -> Report:
    import anyio

    from frontend_stub.client import SidecarClient

    report = Report(prompts=prompts, sessions=sessions, external=external)
    scenario = workdir / "scenario.json"
    scenario.write_text(json.dumps(SCENARIO))
    project = workdir / "project"
    project.mkdir()
    (project / "README.md").write_text("RSS bench project.\n")
    env = sidecar_env(workdir)
    model_proc = None
    model = f"scripted:{scenario}"
    if external:
        model_proc, url = start_external_model(scenario)
        # A "real" model the CLI reaches at ANTHROPIC_BASE_URL: the sidecar starts no model server of its own.
        env.update(ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="rss-bench-external", DISABLE_TELEMETRY="1",
                   CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1")
        model = ""
    argv = [sys.executable, "-m", "sidecar"]
    if tracemalloc_frames:
        argv = [sys.executable, str(ROOT / "bench" / "load_sessions.py"), "serve-sidecar"]
        env.update(ORION_BENCH_TRACEMALLOC="1", ORION_BENCH_TRACEMALLOC_FRAMES=str(tracemalloc_frames))
    t_start = time.monotonic()

    try:
        async with SidecarClient.launch(argv=argv, env=env, cwd=str(ROOT)) as client:
            pid = client.process.pid

            def sample(phase: str, done: int) -> None:
                anon, file = rss_split_mib(pid)
                s = Sample(phase, done, round(rss_mib(pid), 1), round(time.monotonic() - t_start, 1),
                           round(anon, 1), round(file, 1))
                report.samples.append(s)
                if progress:
                    print(f"  {s.at_s:7.1f}s {phase:>8} {done:>5}: {s.rss_mib} MiB (anon {s.anon_mib}, file {s.file_mib})",
                          file=sys.stderr, flush=True)

            async def memory_top(phase: str) -> None:
                if tracemalloc_frames:
                    report.memory_top[phase] = await client.request("bench/memory_top", {"limit": 12}, timeout=300)

            async def new_session() -> str:
                body: dict[str, Any] = {"projectDir": str(project)}
                if model:
                    body["model"] = model
                result = await client.request("session/new", body, timeout=120)
                return str(result["sessionId"])

            async def prompt(sid: str, text: str) -> None:
                try:
                    result = await client.request("session/prompt", {"sessionId": sid, "prompt": text},
                                                  timeout=PROMPT_TIMEOUT_S)
                except Exception as exc:  # noqa: BLE001 - recorded; the run goes on
                    report.prompt_errors.append(f"{sid[:8]} {text!r}: {exc!r}")
                    return
                reason = str(result.get("stopReason", "?"))
                report.stop_reasons[reason] = report.stop_reasons.get(reason, 0) + 1

            await client.request("ping")
            await anyio.sleep(2.0)  # let the background pre-import settle, as bench/idle_rss.py does
            sample("start", 0)
            t0 = time.monotonic()
            if prompts:
                sid = await new_session()
                for i in range(1, prompts + 1):
                    await prompt(sid, f"prompt number {i}: please answer briefly")
                    if i % every == 0 or i == prompts:
                        sample("session", i)
                await client.request("session/end", {"sessionId": sid, "reason": "other"}, timeout=60)
                await memory_top("session")
            for j in range(1, sessions + 1):
                sid = await new_session()
                await prompt(sid, f"short session {j}")
                await client.request("session/end", {"sessionId": sid, "reason": "other"}, timeout=60)
                if j % every == 0 or j == sessions:
                    sample("sessions", j)
            report.wall_s = time.monotonic() - t0
            if sessions:
                await memory_top("sessions")
            await client.request("ping")
            sample("end", prompts + sessions)
            report.peak_mib = peak_mib(pid)
            report.loadavg = Path("/proc/loadavg").read_text().strip()
            report.sidecar_exit = await client.close()
    finally:
        if model_proc is not None:
            model_proc.terminate()
            model_proc.wait(10)
    return report


def print_report(report: Report) -> None:
    model = "external scripted model (separate process)" if report.external else "in-process scripted model"
    print(f"sidecar RSS, {model}: one session of {report.prompts} prompts, then {report.sessions} sessions "
          f"(new, 1 prompt, end) in turn")
    print(f"{'phase':<9} {'done':>6} {'RSS MiB':>8} {'anon':>7} {'file':>7} {'t (s)':>8}")
    for s in report.samples:
        print(f"{s.phase:<9} {s.done:>6} {s.rss_mib:>8.1f} {s.anon_mib:>7.1f} {s.file_mib:>7.1f} {s.at_s:>8.1f}")
    print(f"peak (VmHWM) {report.peak_mib and round(report.peak_mib, 1)} MiB; wall {report.wall_s:.0f} s; "
          f"stop reasons {report.stop_reasons}; prompt errors {len(report.prompt_errors)}; sidecar exit {report.sidecar_exit}")
    print(f"/proc/loadavg at the end: {report.loadavg} ({os.cpu_count()} cores)")
    for e in report.prompt_errors[:10]:
        print(f"  - {e}")
    for phase, top in report.memory_top.items():
        if top.get("tracing"):
            print(f"tracemalloc after the {phase} phase: {top['total_kib']} KiB live in Python allocations; largest sites:")
            for site in top["top"]:
                print(f"  {site['kib']:>8} KiB x{site['count']:<7} {' <- '.join(site['where'])}")
    data = asdict(report)
    data.pop("memory_top")
    data["samples"] = [[s.phase, s.done, s.rss_mib, s.anon_mib, s.file_mib] for s in report.samples]
    print(json.dumps(data, separators=(",", ":")))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=500, help="prompts in the one long session")
    parser.add_argument("--sessions", type=int, default=300, help="short sessions (new, one prompt, end), in turn")
    parser.add_argument("--sample-every", type=int, default=50, metavar="N", help="sample RSS every N prompts/sessions")
    parser.add_argument("--external", action="store_true", help="control: the model is a separate process")
    parser.add_argument("--tracemalloc", type=int, default=0, metavar="FRAMES",
                        help="trace the sidecar's allocations (FRAMES deep); print the largest sites after each phase")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    import anyio

    with tempfile.TemporaryDirectory(prefix="orion-scripted-rss-") as tmp:
        report = anyio.run(lambda: run(args.prompts, args.sessions, max(1, args.sample_every), Path(tmp),
                                       external=args.external, progress=not args.quiet,
                                       tracemalloc_frames=args.tracemalloc))
    print_report(report)
    return 1 if report.prompt_errors or report.sidecar_exit not in (0, None) else 0


if __name__ == "__main__":
    sys.exit(main())
