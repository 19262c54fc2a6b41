"""Hook events at a fixed offered rate (default 1,000/s for 60 s), fired straight at a session's HookRunner in-process or through `hooks/test` over the wire.

Run (from the repository root; offline, nothing leaves the machine):

    .venv/bin/python bench/load_hooks.py --via direct [--rate 1000] [--duration 60] [--mix programmatic|mixed] [--json out.json]
    .venv/bin/python bench/load_hooks.py --via ipc    [--rate 1000] [--duration 60] [--mix programmatic|mixed]

``--via direct``: this process builds the hook set a session gets (built-in
hooks, the project's trusted command hooks, the programmatic hooks) and calls
``HookRunner.fire`` itself, with the sidecar's IPC observer serialising every
hook_started / hook_response to JSON (written to /dev/null).
``--via ipc``: a real sidecar (bench/load_sessions.py serve-sidecar) with one
live scripted session; every event is a ``hooks/test {sessionId, event,
payload}`` request, which fires that session's own runner; the frontend counts
the hook events it receives.

``--mix programmatic``: 10 programmatic hooks on the event. ``--mix mixed``:
5 command hooks (``true``) + 5 programmatic, as in load_sessions.py. The
built-in hooks matching the event run too. The load is open-loop: event i is
due at start + i/rate; at most ``--inflight`` are outstanding, and the
achieved rate is reported next to the offered one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from array import array
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load_sessions import (  # noqa: E402
    ROOT,
    RssSample,
    percentile,
    peak_rss_kib,
    programmatic_hook_names,
    project_settings,
    register_programmatic_hooks,
    sample_rss,
    sidecar_argv,
    slope_mib_per_min,
    thirds,
)

MIXES = {"programmatic": (0, 10), "mixed": (5, 5)}  # (command hooks, programmatic hooks) per event


@dataclass(slots=True, frozen=True)
class HookLoadPlan:
    via: str = "direct"
    rate: float = 1000.0
    duration_s: float = 60.0
    mix: str = "programmatic"
    event: str = "PreToolUse"
    inflight: int = 256
    profile: str | None = None  # --via ipc: cProfile the sidecar into this file
    observer: str = "json"  # --via direct: "json" (json.dumps per event) or "wire" (the sidecar's pydantic model + pydantic-core JSON)


def event_payload(event: str, session_id: str, cwd: str, n: int) -> dict[str, Any]:
    payload: dict[str, Any] = {"session_id": session_id, "cwd": cwd, "hook_event_name": event, "transcript_path": "",
                               "permission_mode": "default"}
    if event in ("PreToolUse", "PostToolUse"):
        payload.update(tool_name="Bash", tool_input={"command": f"echo event-{n}", "description": "load"},
                       tool_use_id=f"toolu_load_{n}")
    if event == "PostToolUse":
        payload["tool_response"] = {"stdout": f"event-{n}", "stderr": "", "interrupted": False, "isImage": False}
    if event == "UserPromptSubmit":
        payload["prompt"] = f"load prompt {n}"
    return payload


@dataclass(slots=True)
class HookLoadReport:
    plan: HookLoadPlan
    fired: int = 0
    completed: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    wall_s: float = 0.0
    # Compact float arrays: in --via direct they share the measured process's RSS.
    fire_ms: array[float] = field(default_factory=lambda: array("d"))  # one event, end to end (fire() / request round trip)
    start_lag_ms: array[float] = field(default_factory=lambda: array("d"))  # how late each event started against its schedule
    hook_ms: dict[str, array[float]] = field(default_factory=lambda: defaultdict(lambda: array("d")))  # by hook type
    outcomes: Counter[str] = field(default_factory=Counter)
    events_out: Counter[str] = field(default_factory=Counter)  # IPC events produced (direct) / received (ipc)
    samples: list[RssSample] = field(default_factory=list)
    peak_kib: int | None = None
    hooks_per_event: Counter[int] = field(default_factory=Counter)
    tracking_backlog: list[int] = field(default_factory=list)  # records queued for the tracking writer, per second (direct)
    frontend_cpu_pct: float | None = None  # --via ipc: this process (the frontend reading every event), % of one core

    def summary(self) -> dict[str, Any]:
        all_hooks = [d for v in self.hook_ms.values() for d in v]
        out: dict[str, Any] = {
            "plan": asdict(self.plan),
            "wall_s": round(self.wall_s, 1),
            "events_fired": self.fired,
            "events_completed": self.completed,
            "offered_rate": self.plan.rate,
            "achieved_rate": round(self.completed / self.wall_s, 1) if self.wall_s else None,
            "errors": dict(self.errors),
            "hooks_per_event": dict(self.hooks_per_event),
            "hook_executions": len(all_hooks),
            "hook_executions_per_s": round(len(all_hooks) / self.wall_s, 1) if self.wall_s else None,
            "hook_outcomes": dict(self.outcomes),
            "ipc_events": sum(self.events_out.values()),
            "ipc_events_per_s": round(sum(self.events_out.values()) / self.wall_s, 1) if self.wall_s else None,
            "event_latency_ms": {"p50": round(percentile(self.fire_ms, 50), 2), "p99": round(percentile(self.fire_ms, 99), 2)},
            "start_lag_ms": {"p50": round(percentile(self.start_lag_ms, 50), 2), "p99": round(percentile(self.start_lag_ms, 99), 2)},
            "hook_latency_ms": {
                kind: {"p50": round(percentile(v, 50), 3), "p99": round(percentile(v, 99), 3), "n": len(v)}
                for kind, v in sorted(self.hook_ms.items())
            },
            "hook_latency_ms_all": {"p50": round(percentile(all_hooks, 50), 3), "p99": round(percentile(all_hooks, 99), 3)},
        }
        if self.tracking_backlog:
            out["tracking_backlog"] = {"max": max(self.tracking_backlog), "last": self.tracking_backlog[-1]}
        # Other work on the machine shows up in every figure; say how busy it was.
        out["loadavg_at_end"] = [round(x, 1) for x in os.getloadavg()]
        if self.samples:
            first, last = thirds(self.samples, "sidecar")
            out["rss"] = {
                "process": "this process" if self.plan.via == "direct" else "sidecar",
                "peak_mib": round((self.peak_kib or 0) / 1024, 1),
                "first_third_mib": round(first, 1),
                "last_third_mib": round(last, 1),
                "slope_mib_per_min": round(slope_mib_per_min(self.samples, "sidecar"), 2),
                "samples": len(self.samples),
            }
            a, b = self.samples[0], self.samples[-1]
            span = (b.at - a.at) or 1.0
            out["cpu_pct"] = {
                "process": round(100 * (b.sidecar_cpu_s - a.sidecar_cpu_s) / span, 1),
                "hook_processes": round(100 * (b.reaped_cpu_s - a.reaped_cpu_s) / span, 1),
            }
            if self.frontend_cpu_pct is not None:
                out["cpu_pct"]["frontend"] = round(self.frontend_cpu_pct, 1)
            if self.completed:
                # CPU per event of the measured process: the rate one free core could carry is 1000 / this.
                out["cpu_ms_per_event"] = round(1000 * (b.sidecar_cpu_s - a.sidecar_cpu_s) / span * self.wall_s / self.completed, 3)
        return out


def write_project(root: Path, commands: int) -> Path:
    project = root / "project"
    (project / ".claude").mkdir(parents=True, exist_ok=True)
    settings = project_settings(commands) if commands else {"hooks": {}}
    (project / ".claude" / "settings.json").write_text(json.dumps(settings))
    return project


async def paced(plan: HookLoadPlan, report: HookLoadReport, fire_one: Any) -> None:
    """Open-loop driver: event i is due at t0 + i/rate; at most plan.inflight outstanding; bounded by count and time."""
    import anyio

    total = int(plan.rate * plan.duration_s)
    limiter = anyio.CapacityLimiter(plan.inflight)
    t0 = time.monotonic()

    async def one(n: int, due: float) -> None:
        try:
            report.start_lag_ms.append((time.monotonic() - due) * 1000)
            started = time.perf_counter()
            await fire_one(n)
            report.fire_ms.append((time.perf_counter() - started) * 1000)
            report.completed += 1
        except Exception as exc:  # noqa: BLE001 - counted; the run goes on
            report.errors[type(exc).__name__] += 1
        finally:
            limiter.release_on_behalf_of(n)

    async with anyio.create_task_group() as tg:
        for n in range(total):
            due = t0 + n / plan.rate
            delay = due - time.monotonic()
            if delay > 0:
                await anyio.sleep(delay)
            if time.monotonic() > t0 + plan.duration_s * 1.5:
                break  # hopelessly behind: stop offering, report what was achieved
            await limiter.acquire_on_behalf_of(n)
            report.fired += 1
            tg.start_soon(one, n, due)
    report.wall_s = time.monotonic() - t0


async def sampler(pid: int, report: HookLoadReport, stop: Any) -> None:
    import anyio

    while not stop.is_set():
        s = await anyio.to_thread.run_sync(sample_rss, pid, time.monotonic())
        if s is not None:
            report.samples.append(s)
        with anyio.move_on_after(1.0):
            await stop.wait()


# --------------------------------------------------------------------------- direct


async def run_direct(plan: HookLoadPlan, root: Path) -> HookLoadReport:
    import anyio

    from hooks.registry import default_registry
    from hooks.runner import HookRunner
    from hooks.trust import TrustStore
    from hooks.types import SessionContext
    from sidecar.hook_events import IpcHookObserver
    from sidecar.sessions import load_session_hookset

    commands, programmatic = MIXES[plan.mix]
    project = write_project(root, commands)
    TrustStore().trust(project)
    register_programmatic_hooks(default_registry, programmatic)
    data_dir = Path(os.environ["ORION_DATA_DIR"])
    hookset = load_session_hookset(project, None, data_dir)
    report = HookLoadReport(plan)
    sink = open(os.devnull, "wb")  # noqa: SIM115 - closed below

    async def notify_json(name: str, params: dict[str, Any]) -> None:
        # One JSON line per event.
        sink.write(json.dumps({"jsonrpc": "2.0", "method": name, "params": params}, separators=(",", ":")).encode() + b"\n")
        report.events_out[name] += 1

    from ipc.registry import EVENTS

    async def notify_wire(name: str, params: dict[str, Any]) -> None:
        # What the sidecar does per event: app.notify validates the dict into the event's model, the peer has
        # pydantic-core write it (ipc/peer.py); the peer's queue and framing are left out.
        model = EVENTS[name].model_validate(params)
        sink.write(b'{"jsonrpc":"2.0","method":"%s","params":' % name.encode()
                   + model.__pydantic_serializer__.to_json(model, by_alias=True) + b"}\n")
        report.events_out[name] += 1

    notify = notify_wire if plan.observer == "wire" else notify_json

    runner = HookRunner(hookset, IpcHookObserver(notify), data_dir=data_dir)
    sid = str(uuid.uuid4())
    context = SessionContext(session_id=sid, project_dir=project, data_dir=data_dir)

    async def fire_one(n: int) -> None:
        agg = await runner.fire(plan.event, event_payload(plan.event, sid, str(project), n), context,
                                tool_use_id=f"toolu_load_{n}")
        report.hooks_per_event[len(agg.results)] += 1
        for r in agg.results:
            report.hook_ms[r.hook_type].append(r.duration_ms)
            report.outcomes[r.outcome] += 1

    stop = anyio.Event()

    async def watch_backlog() -> None:
        # Private: the writer's queue is unbounded, so a backlog would be memory growth of its own.
        while not stop.is_set():
            report.tracking_backlog.append(runner._tracker._queue.qsize())
            with anyio.move_on_after(1.0):
                await stop.wait()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(sampler, os.getpid(), report, stop)
            tg.start_soon(watch_backlog)
            await paced(plan, report, fire_one)
            report.peak_kib = peak_rss_kib(os.getpid())
            stop.set()
    finally:
        await runner.aclose()
        sink.close()
    return report


# --------------------------------------------------------------------------- through the wire


async def run_ipc(plan: HookLoadPlan, root: Path) -> HookLoadReport:
    import anyio

    from frontend_stub.client import SidecarClient

    commands, programmatic = MIXES[plan.mix]
    project = write_project(root, commands)
    scenario = root / "idle.json"
    scenario.write_text(json.dumps({"turns": [], "default": "idle"}))
    env = dict(os.environ, ORION_BENCH_PROGRAMMATIC_HOOKS=str(programmatic))
    if plan.profile:
        env["ORION_BENCH_PROFILE"] = str(Path(plan.profile).resolve())
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    report = HookLoadReport(plan)
    ours = frozenset(programmatic_hook_names(programmatic))

    with anyio.fail_after(plan.duration_s * 2 + 120):
        async with SidecarClient.launch(argv=sidecar_argv(), env=env, cwd=str(ROOT)) as client:
            pid = client.process.pid
            events = client.events(buffer=50_000_000)

            async def consume() -> None:
                async for event in events:
                    report.events_out[event.name] += 1
                    if event.name == "hook_response":
                        p = event.params
                        report.hook_ms[p.get("hookType", "?")].append(float(p.get("durationMs", 0.0)))
                        report.outcomes[p.get("outcome", "?")] += 1

            await client.request("hooks/trust", {"projectDir": str(project)})
            new = await client.request("session/new", {"projectDir": str(project), "model": f"scripted:{scenario}"}, timeout=120)
            sid = new["sessionId"]

            async def fire_one(n: int) -> None:
                result = await client.request(
                    "hooks/test",
                    {"sessionId": sid, "event": plan.event, "payload": event_payload(plan.event, sid, str(project), n)},
                    timeout=60,
                )
                report.hooks_per_event[len(result["results"])] += 1
                missing = ours - {r["hookName"] for r in result["results"]}
                if missing:
                    raise RuntimeError(f"hooks did not run: {sorted(missing)}")

            stop = anyio.Event()
            async with anyio.create_task_group() as tg:
                tg.start_soon(consume)
                tg.start_soon(sampler, pid, report, stop)
                cpu0 = time.process_time()
                await paced(plan, report, fire_one)
                report.frontend_cpu_pct = 100 * (time.process_time() - cpu0) / report.wall_s if report.wall_s else None
                report.peak_kib = peak_rss_kib(pid)
                stop.set()
                await client.request("session/end", {"sessionId": sid}, timeout=30)
                await client.request("ping", timeout=60)  # events already sent have arrived
                tg.cancel_scope.cancel()
    return report


def print_report(report: HookLoadReport) -> None:
    s = report.summary()
    p = report.plan
    commands, programmatic = MIXES[p.mix]
    print(f"via={p.via} event={p.event} mix={p.mix} ({commands} command + {programmatic} programmatic, plus matching built-ins)"
          + (f" observer={p.observer}" if p.via == "direct" else "") + " "
          f"offered {p.rate:g}/s for {p.duration_s:g} s, inflight<={p.inflight}")
    print(f"events: fired {s['events_fired']}, completed {s['events_completed']} in {s['wall_s']} s -> {s['achieved_rate']}/s; "
          f"errors {s['errors']}; hooks per event {s['hooks_per_event']}")
    print(f"event latency: p50 {s['event_latency_ms']['p50']} ms, p99 {s['event_latency_ms']['p99']} ms; "
          f"start lag p50 {s['start_lag_ms']['p50']} ms, p99 {s['start_lag_ms']['p99']} ms")
    print(f"hook executions: {s['hook_executions']} ({s['hook_executions_per_s']}/s) outcomes {s['hook_outcomes']}")
    for kind, lat in s["hook_latency_ms"].items():
        print(f"  hook latency {kind}: p50 {lat['p50']} ms, p99 {lat['p99']} ms (n={lat['n']})")
    print(f"IPC events: {s['ipc_events']} ({s['ipc_events_per_s']}/s)")
    if "rss" in s:
        r = s["rss"]
        print(f"RSS ({r['process']}): peak {r['peak_mib']} MiB; first third {r['first_third_mib']} MiB, last third "
              f"{r['last_third_mib']} MiB; slope {r['slope_mib_per_min']} MiB/min; CPU {s['cpu_pct']}")
    if "cpu_ms_per_event" in s:
        print(f"CPU per event ({s['rss']['process']}): {s['cpu_ms_per_event']} ms, about {round(1000 / s['cpu_ms_per_event']) if s['cpu_ms_per_event'] else '-'} events/s per free core")
    if "tracking_backlog" in s:
        print(f"tracking writer backlog (records queued): max {s['tracking_backlog']['max']}, at the end {s['tracking_backlog']['last']}")
    print(f"load average at the end: {s['loadavg_at_end']} ({os.cpu_count()} cores)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--via", choices=("direct", "ipc"), default="direct")
    parser.add_argument("--rate", type=float, default=1000.0, help="offered hook events per second")
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--mix", choices=sorted(MIXES), default="programmatic")
    parser.add_argument("--event", default="PreToolUse")
    parser.add_argument("--inflight", type=int, default=256)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--profile", help="--via ipc: write a cProfile of the sidecar here (pstats format)")
    parser.add_argument("--observer", choices=("json", "wire"), default="json",
                        help="--via direct: json.dumps each event (default), or encode it as the sidecar does (pydantic model)")
    args = parser.parse_args(argv)
    plan = HookLoadPlan(via=args.via, rate=args.rate, duration_s=args.duration, mix=args.mix, event=args.event,
                        inflight=args.inflight, profile=args.profile, observer=args.observer)

    import anyio

    with tempfile.TemporaryDirectory(prefix="orion-hookload-") as tmp:
        root = Path(tmp)
        # Isolated trust store, data dir and user settings: nothing touches the real ones.
        os.environ["ORION_DATA_DIR"] = str(root / "data")
        os.environ["ORION_USER_SETTINGS"] = str(root / "no-user-settings.json")
        os.environ["ORION_CLAUDE_USER_SETTINGS"] = str(root / "no-claude-user-settings.json")
        os.environ["HOME"] = str(root / "home")
        (root / "home").mkdir()
        os.environ.pop("ANTHROPIC_API_KEY", None)
        run = run_direct if plan.via == "direct" else run_ipc
        report = anyio.run(run, plan, root)
    print_report(report)
    if args.json:
        data = report.summary()
        data["rss_samples"] = [asdict(s) for s in report.samples]
        args.json.write_text(json.dumps(data, indent=2))
    return 1 if report.errors or set(report.outcomes) - {"success"} else 0


if __name__ == "__main__":
    sys.exit(main())
