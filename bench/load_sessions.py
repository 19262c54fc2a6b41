"""Load and soak: concurrent scripted sessions through a real sidecar, many Bash calls each, 10 hooks per event; events/s, hook latency, RSS over time.

Run (from the repository root; offline, scripted model, 127.0.0.1 only):

    .venv/bin/python bench/load_sessions.py [--sessions 8] [--duration 120] [--steps 20] [--parallel 1] [--json out.json]

Every session repeats the prompt "load batch": the scripted model answers with
``--steps`` consecutive replies of ``--parallel`` Bash ``echo`` calls each, then
a closing text. UserPromptSubmit, PreToolUse, PostToolUse and Stop each carry
10 hooks of ours: 5 trusted project command hooks (``true``, a shell builtin)
and 5 programmatic hooks registered in the sidecar process (the sidecar is
started through ``serve-sidecar`` below, which registers them and then runs
``python -m sidecar``'s main). The built-in Orion hooks run as well, as they do
in every session. The frontend is frontend_stub's SidecarClient.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

HOOKED_EVENTS = ("UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
COMMAND_HOOKS = 5
PROGRAMMATIC_HOOKS = 5
PROMPT = "load batch"
PROMPT_TIMEOUT_S = 180.0
RSS_SAMPLE_S = 1.0


# --------------------------------------------------------------------------- the workload


@dataclass(slots=True, frozen=True)
class LoadPlan:
    sessions: int = 8
    duration_s: float = 120.0
    steps: int = 20  # model replies with tool calls per prompt
    parallel: int = 1  # Bash calls per reply
    max_prompts: int = 10_000  # per session; the duration is the usual bound


def command_hook_names(n: int = COMMAND_HOOKS) -> list[str]:
    return [f"load-cmd-{i}" for i in range(1, n + 1)]


def programmatic_hook_names(n: int = PROGRAMMATIC_HOOKS) -> list[str]:
    return [f"load-prog-{i}" for i in range(1, n + 1)]


def our_hook_names() -> frozenset[str]:
    return frozenset(command_hook_names() + programmatic_hook_names())


def batch_scenario(steps: int, parallel: int) -> dict[str, Any]:
    """The scripted model's side: prompt -> step 1 calls -> ... -> step N calls -> "Batch done."."""

    def calls(step: int) -> list[dict[str, Any]]:
        return [
            {"tool_use": {"name": "Bash", "input": {"command": f"echo load.{step}.{k}.of.{steps}", "description": "load step"}}}
            for k in range(1, parallel + 1)
        ]

    rules: list[dict[str, Any]] = [{"name": "step-1", "when": {"last_user_contains": PROMPT}, "reply": calls(1)}]
    for step in range(1, steps):
        rules.append(
            {"name": f"step-{step + 1}", "when": {"last_tool_result_contains": f"load.{step}.1.of.{steps}"}, "reply": calls(step + 1)}
        )
    return {
        "name": f"load-{steps}x{parallel}",
        "description": "Repeated prompts, each a chain of Bash echo calls (bench/load_sessions.py).",
        "text_chunk": 64,
        "turns": [],
        "rules": rules,
        "default": "Batch done.",
        "side_reply": "Load",
    }


def project_settings(commands: int = COMMAND_HOOKS) -> dict[str, Any]:
    """`commands` command hooks per hooked event; distinct commands, since identical ones run once."""
    hooks: dict[str, Any] = {}
    for event in HOOKED_EVENTS:
        entries = [
            {"type": "command", "command": f"true {name}", "name": name, "timeout": 10} for name in command_hook_names(commands)
        ]
        hooks[event] = [{"matcher": "Bash", "hooks": entries}] if event in ("PreToolUse", "PostToolUse") else [{"hooks": entries}]
    return {"hooks": hooks}


def write_workspace(root: Path, plan: LoadPlan) -> tuple[list[Path], Path]:
    """(one project dir with .claude/settings.json per session, scenario file).

    One project per session: the bundled CLI's Bash sandbox (2.1.330) creates and removes placeholder files in
    the project for every command, and two sandboxed sessions in one project race on them (docs/SECURITY.md).
    """
    projects = []
    for i in range(plan.sessions):
        project = root / f"project-{i}"
        (project / ".claude").mkdir(parents=True, exist_ok=True)
        (project / ".claude" / "settings.json").write_text(json.dumps(project_settings(), indent=2))
        (project / "README.md").write_text("Load test project.\n")
        projects.append(project)
    scenario = root / "scenario.json"
    scenario.write_text(json.dumps(batch_scenario(plan.steps, plan.parallel)))
    return projects, scenario


def register_programmatic_hooks(registry: Any, count: int = PROGRAMMATIC_HOOKS) -> None:
    """`count` cheap in-process hooks per hooked event: each counts its calls in the session's scratch state."""
    for event in HOOKED_EVENTS:
        for name in programmatic_hook_names(count):

            async def note_call(payload: dict[str, Any], ctx: Any, _name: str = name) -> None:
                ctx.state[_name] = ctx.state.get(_name, 0) + 1
                return None

            registry.register(event, note_call, name=name, matcher="Bash" if event in ("PreToolUse", "PostToolUse") else None, timeout=10)


def serve_sidecar() -> int:
    """`python bench/load_sessions.py serve-sidecar`: the real sidecar, with the programmatic load hooks registered first."""
    from hooks.registry import default_registry
    from sidecar.__main__ import main

    # bench/load_hooks.py asks for another count through the environment.
    register_programmatic_hooks(default_registry, int(os.environ.get("ORION_BENCH_PROGRAMMATIC_HOOKS", PROGRAMMATIC_HOOKS)))
    keep = os.environ.get("ORION_BENCH_SCRIPTED_KEEP")
    if keep:
        trim_scripted_request_logs(int(keep))
    if os.environ.get("ORION_BENCH_TRACEMALLOC") == "1":
        import tracemalloc

        tracemalloc.start(int(os.environ.get("ORION_BENCH_TRACEMALLOC_FRAMES", "1")))
    profile_to = os.environ.get("ORION_BENCH_PROFILE")
    if profile_to:
        import cProfile

        profiler = cProfile.Profile()
        try:
            return profiler.runcall(main, [], setup=add_bench_methods)
        finally:
            profiler.dump_stats(profile_to)
    return main([], setup=add_bench_methods)


def trim_scripted_request_logs(keep: int) -> None:
    """Keep only the last `keep` requests each shared scripted server remembers (a daemon thread, every second).

    The scripted model is the test double standing in for the API; it keeps every
    request body it was sent, and a long conversation resends its whole history
    each time. With this the soak measures the sidecar, not the double's log.
    """
    import threading

    from sidecar.scripted_model import server as scripted

    def trim() -> None:
        while True:
            time.sleep(1.0)
            host = scripted._host  # private: the bench reaches in so the product code needs no knob
            for srv in list(host.servers.values()) if host is not None else []:
                with srv._lock:
                    del srv.requests[:-keep]

    threading.Thread(target=trim, name="bench-trim-scripted-log", daemon=True).start()


def add_bench_methods(app: Any) -> None:
    """`bench/memory_top {limit}`: the largest live allocation sites (needs ORION_BENCH_TRACEMALLOC=1)."""
    from pydantic import BaseModel, ConfigDict

    class TopParams(BaseModel):
        model_config = ConfigDict(extra="allow")
        limit: int = 15

    @app.method("bench/memory_top", params=TopParams)
    async def memory_top(params: TopParams, call: Any) -> dict[str, Any]:
        import tracemalloc

        if not tracemalloc.is_tracing():
            return {"tracing": False, "top": []}
        stats = tracemalloc.take_snapshot().statistics("traceback")
        total = sum(s.size for s in stats)
        top = [{"kib": round(s.size / 1024), "count": s.count, "where": [f"{f.filename}:{f.lineno}" for f in s.traceback]}
               for s in stats[: params.limit]]
        return {"tracing": True, "total_kib": round(total / 1024), "top": top}


def sidecar_argv() -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "serve-sidecar"]


def sidecar_env(root: Path) -> dict[str, str]:
    """An isolated HOME / data dir / user settings under `root`, unless the caller's environment already isolates them."""
    env = dict(os.environ)
    env.setdefault("ORION_DATA_DIR", str(root / "data"))
    env.setdefault("ORION_USER_SETTINGS", str(root / "no-user-settings.json"))
    env.setdefault("ORION_CLAUDE_USER_SETTINGS", str(root / "no-claude-user-settings.json"))
    if "ORION_DATA_DIR" not in os.environ:
        env["HOME"] = str(root / "home")
        Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("ANTHROPIC_API_KEY", None)
    return env


# --------------------------------------------------------------------------- what the frontend saw


@dataclass(slots=True)
class EventTally:
    """Counts every event the frontend received and keeps what the correctness check needs."""

    ours: frozenset[str]
    by_name: Counter[str] = field(default_factory=Counter)
    durations_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    by_hook: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    outcomes: Counter[str] = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)
    # (sessionId, event, toolUseId) -> names of our hooks started for it, in order
    groups: dict[tuple[str, str, str], list[str]] = field(default_factory=lambda: defaultdict(list))
    tool_calls: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # sessionId -> toolUseIds
    fire_index: Counter[tuple[str, str]] = field(default_factory=Counter)  # (sessionId, event) -> current firing
    completed_tools: Counter[str] = field(default_factory=Counter)  # tool_call_update status
    error_logs: list[str] = field(default_factory=list)
    first_at: float | None = None
    last_at: float | None = None

    def _group_key(self, params: dict[str, Any]) -> tuple[str, str, str]:
        sid, event, tool_use_id = params.get("sessionId", ""), params.get("event", ""), params.get("toolUseId")
        if tool_use_id:
            return (sid, event, tool_use_id)
        # Prompt-level events carry no tool id; a session's prompts run one after another, so a hook name
        # seen again for (session, event) means the next prompt's firing began.
        n = self.fire_index[(sid, event)]
        if params["hookName"] in self.groups.get((sid, event, f"#{n}"), ()):
            n = self.fire_index[(sid, event)] = n + 1
        return (sid, event, f"#{n}")

    def add(self, name: str, params: Any, at: float) -> None:
        self.by_name[name] += 1
        if self.first_at is None:
            self.first_at = at
        self.last_at = at
        if not isinstance(params, dict):
            return
        if name == "hook_started":
            if params.get("hookName") in self.ours:
                self.groups[self._group_key(params)].append(params["hookName"])
        elif name == "hook_response":
            duration = float(params.get("durationMs", 0.0))
            self.durations_ms[params.get("hookType", "?")].append(duration)
            self.by_hook[f"{params.get('event')}/{params.get('hookName')}"].append(duration)
            self.outcomes[params.get("outcome", "?")] += 1
            if params.get("outcome") != "success":
                self.failures.append({k: params.get(k) for k in ("hookName", "event", "outcome", "error", "exitCode")})
        elif name == "session/update":
            update = params.get("update") or {}
            kind = update.get("sessionUpdate")
            if kind == "tool_call":
                self.tool_calls[params.get("sessionId", "")].add(update.get("toolUseId", ""))
            elif kind == "tool_call_update":
                self.completed_tools[str(update.get("status"))] += 1
        elif name == "log" and str(params.get("level", "")).lower() in ("error", "critical"):
            self.error_logs.append(str(params.get("message", params))[:300])

    def hook_executions(self) -> int:
        return sum(len(v) for v in self.durations_ms.values())


def check_hooks(tally: EventTally, prompts: dict[str, int]) -> list[str]:
    """Every tool call and every prompt got each of our 10 hooks exactly once; returns the problems found."""
    problems: list[str] = []
    expected = sorted(tally.ours)
    for (sid, event, tool_use_id), names in tally.groups.items():
        if sorted(names) != expected:
            extra = Counter(names) - Counter(expected)
            missing = Counter(expected) - Counter(names)
            problems.append(f"{sid[:8]} {event} {tool_use_id}: missing {dict(missing)} extra {dict(extra)}")
    for sid, tool_ids in tally.tool_calls.items():
        for event in ("PreToolUse", "PostToolUse"):
            got = {tid for (s, e, tid) in tally.groups if s == sid and e == event}
            if got != tool_ids:
                problems.append(f"{sid[:8]} {event}: hooks for {len(got)} tool calls, {len(tool_ids)} tool calls seen")
    for sid, count in prompts.items():
        for event in ("UserPromptSubmit", "Stop"):
            got = sum(1 for (s, e, _t) in tally.groups if s == sid and e == event)
            if got != count:
                problems.append(f"{sid[:8]} {event}: hooks ran for {got} of {count} prompts")
    return problems


# --------------------------------------------------------------------------- memory over time


@dataclass(slots=True)
class RssSample:
    at: float
    sidecar: int
    tree: int
    processes: int
    sidecar_cpu_s: float = 0.0  # the sidecar's own user+system time
    reaped_cpu_s: float = 0.0  # children it has reaped (hook processes)
    live_children_cpu_s: float = 0.0  # children alive now (the CLIs, hooks running)


def sample_rss(pid: int, at: float) -> RssSample | None:
    import psutil

    try:
        root = psutil.Process(pid)
        own = root.memory_info().rss
        times = root.cpu_times()
        tree, count, live_cpu = own, 1, 0.0
        for child in root.children(recursive=True):
            try:
                tree += child.memory_info().rss
                ct = child.cpu_times()
                live_cpu += ct.user + ct.system
                count += 1
            except psutil.Error:
                pass
    except psutil.Error:
        return None
    return RssSample(at, own, tree, count, times.user + times.system, times.children_user + times.children_system, live_cpu)


def peak_rss_kib(pid: int) -> int | None:
    """VmHWM: the kernel's record of the process's peak resident set."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def thirds(samples: list[RssSample], attr: str) -> tuple[float, float]:
    """Mean of the first and of the last third of the samples (MiB)."""
    values = [getattr(s, attr) / 2**20 for s in samples]
    n = max(1, len(values) // 3)
    return statistics.fmean(values[:n]), statistics.fmean(values[-n:])


def slope_mib_per_min(samples: list[RssSample], attr: str) -> float:
    """Least-squares growth over the last two thirds (after start-up): ~0 when memory has plateaued."""
    tail = samples[len(samples) // 3 :]
    if len(tail) < 3:
        return 0.0
    xs = [s.at for s in tail]
    ys = [getattr(s, attr) / 2**20 for s in tail]
    return statistics.linear_regression(xs, ys).slope * 60


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


# --------------------------------------------------------------------------- the run


@dataclass(slots=True)
class LoadReport:
    plan: LoadPlan
    wall_s: float = 0.0  # from the first prompt sent to the last prompt answered
    setup_s: float = 0.0
    prompts: dict[str, int] = field(default_factory=dict)
    prompt_errors: list[str] = field(default_factory=list)
    stop_reasons: Counter[str] = field(default_factory=Counter)
    tally: EventTally | None = None
    samples: list[RssSample] = field(default_factory=list)
    load_started_at: float = 0.0
    peak_sidecar_kib: int | None = None
    end_results: list[Any] = field(default_factory=list)
    sidecar_exit: int | None = None
    leftover_processes: list[str] = field(default_factory=list)
    stderr_tail: str = ""
    memory_top: dict[str, Any] | None = None

    def problems(self) -> list[str]:
        assert self.tally is not None
        found = list(self.prompt_errors)
        found += [f"prompt ended {reason!r} x{n}" for reason, n in self.stop_reasons.items() if reason != "end_turn"]
        found += [f"hook {f['hookName']} on {f['event']}: {f['outcome']} {f['error'] or ''}" for f in self.tally.failures[:20]]
        found += check_hooks(self.tally, self.prompts)
        found += [f"error log: {m}" for m in self.tally.error_logs[:20]]
        found += [f"left behind: {p}" for p in self.leftover_processes]
        return found

    def summary(self) -> dict[str, Any]:
        t = self.tally
        assert t is not None
        tools = sum(len(v) for v in t.tool_calls.values())
        all_durations = [d for v in t.durations_ms.values() for d in v]
        out: dict[str, Any] = {
            "plan": asdict(self.plan),
            "wall_s": round(self.wall_s, 1),
            "session_setup_s": round(self.setup_s, 2),
            "prompts": sum(self.prompts.values()),
            "tool_calls": tools,
            "tool_calls_per_s": round(tools / self.wall_s, 1) if self.wall_s else None,
            "events_received": sum(t.by_name.values()),
            "events_per_s": round(sum(t.by_name.values()) / self.wall_s, 1) if self.wall_s else None,
            "events_by_name": dict(t.by_name.most_common()),
            "hook_executions": t.hook_executions(),
            "hook_executions_per_s": round(t.hook_executions() / self.wall_s, 1) if self.wall_s else None,
            "hook_outcomes": dict(t.outcomes),
            "hook_latency_ms": {
                kind: {"p50": round(percentile(v, 50), 2), "p99": round(percentile(v, 99), 2), "n": len(v)}
                for kind, v in sorted(t.durations_ms.items())
            },
            "hook_latency_ms_by_name": {
                name: {"p50": round(percentile(v, 50), 2), "p99": round(percentile(v, 99), 2), "n": len(v)}
                for name, v in sorted(t.by_hook.items())
            },
            "hook_latency_ms_all": {"p50": round(percentile(all_durations, 50), 2), "p99": round(percentile(all_durations, 99), 2)},
            "problems": self.problems(),
            "sidecar_exit": self.sidecar_exit,
        }
        # Other work on the machine shows up in every figure; say how busy it was.
        out["loadavg_at_end"] = [round(x, 1) for x in os.getloadavg()]
        # Start-up (imports, session/new) is not the plateau question: only samples of the load phase count.
        samples = [x for x in self.samples if x.at >= self.load_started_at] or self.samples
        if samples:
            first, last = thirds(samples, "sidecar")
            tfirst, tlast = thirds(samples, "tree")
            out["rss"] = {
                "samples": len(samples),
                "sidecar_peak_mib": round((self.peak_sidecar_kib or 0) / 1024, 1),
                "sidecar_max_sampled_mib": round(max(x.sidecar for x in samples) / 2**20, 1),
                "sidecar_first_third_mib": round(first, 1),
                "sidecar_last_third_mib": round(last, 1),
                "sidecar_slope_mib_per_min": round(slope_mib_per_min(samples, "sidecar"), 2),
                "tree_peak_mib": round(max(x.tree for x in self.samples) / 2**20, 1),
                "tree_first_third_mib": round(tfirst, 1),
                "tree_last_third_mib": round(tlast, 1),
                "tree_slope_mib_per_min": round(slope_mib_per_min(samples, "tree"), 2),
                "max_processes": max(x.processes for x in samples),
            }
            # CPU spent during the load phase, by who spent it (cumulative counters, last minus first sample).
            a, b = samples[0], samples[-1]
            span = (b.at - a.at) or 1.0
            out["cpu_during_load"] = {
                "seconds": round(span, 1),
                "sidecar_cpu_pct": round(100 * (b.sidecar_cpu_s - a.sidecar_cpu_s) / span, 1),
                "hook_processes_cpu_pct": round(100 * (b.reaped_cpu_s - a.reaped_cpu_s) / span, 1),
                "clis_cpu_pct": round(100 * (b.live_children_cpu_s - a.live_children_cpu_s) / span, 1),
                "cores": os.cpu_count(),
            }
        return out


async def run_load(plan: LoadPlan, workdir: Path, *, env: dict[str, str] | None = None, progress: bool = False) -> LoadReport:
    """Launch the sidecar, run `plan.sessions` sessions concurrently for `plan.duration_s`, end them, and report."""
    import anyio
    import psutil

    from frontend_stub.client import SidecarClient

    projects, scenario = write_workspace(workdir, plan)
    report = LoadReport(plan)
    tally = EventTally(our_hook_names())
    report.tally = tally
    child_env = env if env is not None else sidecar_env(workdir)
    descendants: set[int] = set()

    async def on_request(method: str, params: Any) -> dict[str, Any]:
        # allowedTools covers Bash; an ask here would be a finding of its own.
        report.prompt_errors.append(f"unexpected frontend request {method}")
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

    hard_bound = plan.duration_s + 240.0
    with anyio.fail_after(hard_bound):
        async with SidecarClient.launch(argv=sidecar_argv(), env=child_env, cwd=str(ROOT), on_request=on_request) as client:
            pid = client.process.pid
            events = client.events(buffer=10_000_000)
            stop_sampling = anyio.Event()

            async def consume() -> None:
                async for event in events:
                    tally.add(event.name, event.params, event.received_at)

            async def sample() -> None:
                while not stop_sampling.is_set():
                    s = await anyio.to_thread.run_sync(sample_rss, pid, time.monotonic())
                    if s is not None:
                        report.samples.append(s)
                        with_children = psutil.Process(pid).children(recursive=True) if psutil.pid_exists(pid) else []
                        descendants.update(c.pid for c in with_children)
                    with anyio.move_on_after(RSS_SAMPLE_S):
                        await stop_sampling.wait()

            async with anyio.create_task_group() as tg:
                tg.start_soon(consume)
                tg.start_soon(sample)
                for project in projects:
                    await client.request("hooks/trust", {"projectDir": str(project)})
                t0 = time.monotonic()
                ids: list[str] = []

                async def open_session(project: Path) -> None:
                    result = await client.request(
                        "session/new",
                        {"projectDir": str(project), "model": f"scripted:{scenario}", "allowedTools": ["Bash"]},
                        timeout=120,
                    )
                    ids.append(result["sessionId"])

                async with anyio.create_task_group() as opening:
                    for project in projects:
                        opening.start_soon(open_session, project)
                report.setup_s = time.monotonic() - t0
                report.prompts = {sid: 0 for sid in ids}
                started = report.load_started_at = time.monotonic()
                deadline = started + plan.duration_s

                async def drive(sid: str) -> None:
                    while time.monotonic() < deadline and report.prompts[sid] < plan.max_prompts:
                        report.prompts[sid] += 1
                        try:
                            result = await client.request("session/prompt", {"sessionId": sid, "prompt": PROMPT},
                                                          timeout=PROMPT_TIMEOUT_S)
                        except Exception as exc:  # noqa: BLE001 - recorded as a finding; the run goes on
                            report.prompt_errors.append(f"{sid[:8]} prompt {report.prompts[sid]}: {exc!r}")
                            return
                        report.stop_reasons[result.get("stopReason", "?")] += 1
                        if progress:
                            done = sum(report.prompts.values())
                            print(f"  {time.monotonic() - started:6.1f}s prompts={done} events={sum(tally.by_name.values())}",
                                  file=sys.stderr)

                async with anyio.create_task_group() as driving:
                    for sid in ids:
                        driving.start_soon(drive, sid)
                report.wall_s = time.monotonic() - started
                report.peak_sidecar_kib = peak_rss_kib(pid)
                if child_env.get("ORION_BENCH_TRACEMALLOC") == "1":
                    report.memory_top = await client.request("bench/memory_top", {"limit": 12}, timeout=120)
                async with anyio.create_task_group() as ending:
                    for sid in ids:
                        async def end(sid: str = sid) -> None:
                            report.end_results.append(
                                await client.request("session/end", {"sessionId": sid, "reason": "other"}, timeout=30)
                            )
                        ending.start_soon(end)
                stop_sampling.set()
                # Let events already on the wire arrive before counting stops.
                await client.request("ping", timeout=30)
                tg.cancel_scope.cancel()
            report.peak_sidecar_kib = peak_rss_kib(pid) or report.peak_sidecar_kib
            report.sidecar_exit = await client.close()
            report.stderr_tail = client.stderr_text()[-4000:]
    with anyio.move_on_after(5):
        while True:
            alive = [p for p in descendants if psutil.pid_exists(p) and _not_zombie(p)]
            if not alive:
                break
            await anyio.sleep(0.2)
    report.leftover_processes = [_describe(p) for p in descendants if psutil.pid_exists(p) and _not_zombie(p)]
    return report


def _not_zombie(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _describe(pid: int) -> str:
    import psutil

    try:
        return f"{pid} {' '.join(psutil.Process(pid).cmdline())[:120]}"
    except psutil.Error:
        return str(pid)


def print_report(report: LoadReport) -> None:
    s = report.summary()
    plan = report.plan
    print(f"sessions={plan.sessions} duration={plan.duration_s:g}s steps={plan.steps} parallel={plan.parallel} "
          f"hooks/event={COMMAND_HOOKS} command + {PROGRAMMATIC_HOOKS} programmatic on {', '.join(HOOKED_EVENTS)}")
    print(f"session/new x{plan.sessions} (concurrent): {s['session_setup_s']} s")
    print(f"load phase: {s['wall_s']} s, prompts {s['prompts']}, tool calls {s['tool_calls']} ({s['tool_calls_per_s']}/s)")
    print(f"events received by the frontend: {s['events_received']} ({s['events_per_s']}/s) {s['events_by_name']}")
    print(f"hook executions: {s['hook_executions']} ({s['hook_executions_per_s']}/s) outcomes {s['hook_outcomes']}")
    for kind, lat in s["hook_latency_ms"].items():
        print(f"  hook latency {kind}: p50 {lat['p50']} ms, p99 {lat['p99']} ms (n={lat['n']})")
    print(f"  hook latency all: p50 {s['hook_latency_ms_all']['p50']} ms, p99 {s['hook_latency_ms_all']['p99']} ms")
    if "rss" in s:
        r = s["rss"]
        print(f"sidecar RSS: peak (VmHWM) {r['sidecar_peak_mib']} MiB; mean first third {r['sidecar_first_third_mib']} MiB, "
              f"last third {r['sidecar_last_third_mib']} MiB; slope over last 2/3 {r['sidecar_slope_mib_per_min']} MiB/min")
        print(f"process tree RSS: peak {r['tree_peak_mib']} MiB; first third {r['tree_first_third_mib']} MiB, last third "
              f"{r['tree_last_third_mib']} MiB; slope {r['tree_slope_mib_per_min']} MiB/min; up to {r['max_processes']} processes")
    if "cpu_during_load" in s:
        c = s["cpu_during_load"]
        print(f"CPU during load ({c['cores']} cores): sidecar {c['sidecar_cpu_pct']}%, hook processes {c['hook_processes_cpu_pct']}%, "
              f"CLIs {c['clis_cpu_pct']}%")
    slow = sorted(s["hook_latency_ms_by_name"].items(), key=lambda kv: -kv[1]["p99"])[:6]
    print("slowest hooks by p99: " + ", ".join(f"{k} p50 {v['p50']} / p99 {v['p99']} ms" for k, v in slow))
    print(f"load average at the end: {s['loadavg_at_end']} ({os.cpu_count()} cores)")
    print(f"sidecar exit code: {s['sidecar_exit']}; processes left behind: {len(report.leftover_processes)}")
    if report.memory_top and report.memory_top.get("tracing"):
        print(f"tracemalloc: {report.memory_top['total_kib']} KiB live in Python allocations; largest sites:")
        for site in report.memory_top["top"]:
            print(f"  {site['kib']:>8} KiB x{site['count']:<7} {' <- '.join(site['where'])}")
    problems = s["problems"]
    print(f"problems: {len(problems)}")
    for p in problems[:30]:
        print(f"  - {p}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of load (new prompts start until then)")
    parser.add_argument("--steps", type=int, default=20, help="model replies with tool calls per prompt")
    parser.add_argument("--parallel", type=int, default=1, help="Bash calls per reply")
    parser.add_argument("--json", type=Path, help="also write the summary (and RSS samples) here")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--scripted-keep", type=int, default=0, metavar="N",
                        help="let the scripted model keep only its last N request records (0: keep all, as shipped)")
    parser.add_argument("--tracemalloc", type=int, default=0, metavar="FRAMES",
                        help="trace the sidecar's allocations (FRAMES deep) and print the largest sites after the load")
    args = parser.parse_args(argv)
    plan = LoadPlan(sessions=args.sessions, duration_s=args.duration, steps=args.steps, parallel=args.parallel)

    import anyio

    with tempfile.TemporaryDirectory(prefix="orion-load-") as tmp:
        env = sidecar_env(Path(tmp))
        if args.scripted_keep:
            env["ORION_BENCH_SCRIPTED_KEEP"] = str(args.scripted_keep)
        if args.tracemalloc:
            env.update(ORION_BENCH_TRACEMALLOC="1", ORION_BENCH_TRACEMALLOC_FRAMES=str(args.tracemalloc))
        report = anyio.run(lambda: run_load(plan, Path(tmp), env=env, progress=not args.quiet))
    print_report(report)
    if args.json:
        data = report.summary()
        data["rss_samples"] = [asdict(s) for s in report.samples]
        args.json.write_text(json.dumps(data, indent=2))
    return 1 if report.problems() else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve-sidecar"]:
        sys.exit(serve_sidecar())
    sys.exit(main())
