"""Added time per PreToolUse command hook on a real turn: the sidecar's runner (via SDK callbacks) side by side with the CLI running the same hooks from a settings file.

Run (from the repository root; offline, scripted model on 127.0.0.1, real bundled CLI):

    .venv/bin/python bench/session_hook_cost.py [--reps 30] [--hooks 0,1,10] [--events PreToolUse] [--json out.json]
    .venv/bin/python bench/session_hook_cost.py --hooks 0,10,50,200,400 --events PreToolUse,PostToolUse --reps 15
    .venv/bin/python bench/session_hook_cost.py ... --boxed   # ours: hooks in the session's hook box, as shipped

Six live sessions, one per (runner, hook count):

* ours-N: ``AgentSession`` as the sidecar builds it (setting_sources=[],
  disableAllHooks, one bridge callback per SDK event) with ``RunnerBridge`` over
  a ``HookRunner`` whose hook set is the project's N trusted command hooks
  (built-in hooks left out so both sides run the same hooks); the runner's
  observer is the sidecar's ``IpcHookObserver`` writing each event as a JSON
  line to /dev/null, as the peer would.
* cli-N: the same options with ``setting_sources=["project"]``, no
  ``disableAllHooks`` and no SDK callbacks: the CLI runs the project's
  ``.claude/settings.json`` hooks itself.

The hooks are N command hooks ``true hook-<event>-i`` on each event of
``--events`` (matcher Bash; distinct commands, since identical ones run once).
The CLI runs a tool event's hooks at once; so do we for PostToolUse, which is
where what the hooks leave behind is looked for after each one (ours: the
files this process reads under /proc per hook are counted, whoever reads them,
and the processes the leftover bookkeeping examined per hook). Every turn is one prompt
-> one Bash ``true`` -> a closing text; the sessions take turns round-robin so
drift hits all alike. Two figures per turn: the whole turn (prompt to
ResultMessage) and the tool phase (the scripted server's arrival time of the
turn's second model request minus the first's: the tool call's hooks, the
tool itself, PostToolUse and the next request).
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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SCENARIO_FILE = Path(__file__).resolve().parent / "scenarios" / "one_bash.yaml"
PROMPT = "run the tool"
WARMUP_TURNS = 2


class ProcReads:
    """Counts the files and directories this process opens or lists under /proc (ours run in this process)."""

    def __init__(self) -> None:
        import builtins

        self.count = 0
        for owner, name in ((os, "open"), (builtins, "open"), (os, "listdir"), (os, "scandir"), (os, "readlink")):
            setattr(owner, name, self._wrap(getattr(owner, name)))

    def _wrap(self, real: Any) -> Any:
        def counted(path: Any = ".", *args: Any, **kwargs: Any) -> Any:
            if isinstance(path, (str, bytes)) and path[:5] in ("/proc", b"/proc"):
                self.count += 1
            return real(path, *args, **kwargs)

        return counted


def settings_with_hooks(n: int, events: tuple[str, ...] = ("PreToolUse",)) -> dict[str, Any]:
    if not n:
        return {"hooks": {}}
    suffix = {"PreToolUse": ""}  # the PreToolUse commands keep the names of earlier runs
    return {"hooks": {event: [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": f"true hook-{suffix.get(event, event + '-')}{i}", "timeout": 30}
        for i in range(1, n + 1)]}] for event in events}}


def write_project(root: Path, name: str, n: int, events: tuple[str, ...] = ("PreToolUse",)) -> Path:
    project = root / name
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps(settings_with_hooks(n, events), indent=2))
    return project


@dataclass(slots=True)
class Variant:
    """One live session of one configuration, with the turn timings it collected."""

    name: str
    runner: str  # "ours" | "cli"
    hooks: int
    project: Path
    turn_ms: list[float] = field(default_factory=list)
    tool_phase_ms: list[float] = field(default_factory=list)
    cli_reported_ms: list[float] = field(default_factory=list)
    hook_responses: int = 0
    events: tuple[str, ...] = ("PreToolUse",)
    session: Any = None  # AgentSession (ours) or ClaudeSDKClient (cli)
    runner_obj: Any = None
    conversation: str | None = None
    boxed: bool = False  # ours: the project's hooks start in the session's hook box, as the sidecar starts them
    context: Any = None


class NoBridge:
    """Only for build_options(): the cli-N sessions register no SDK callbacks at all."""

    async def fire(self, event: str, payload: dict[str, Any], tool_use_id: str | None) -> dict[str, Any]:
        return {}

    def budget_s(self, event: str) -> float:
        return 10.0


class NullAsker:
    async def ask(self, *args: Any) -> Any:
        from sidecar.agent import PermissionAnswer

        return PermissionAnswer(allow=True)


async def ignore(update: dict[str, Any]) -> None:
    return None


async def start_ours(v: Variant, url: str, home: Path, data_dir: Path) -> None:
    from hooks.hookset import load_hookset
    from hooks.registry import HookRegistry
    from hooks.runner import HookRunner
    from hooks.trust import TrustStore
    from hooks.types import SessionContext
    from sidecar.agent import AgentConfig, AgentSession
    from sidecar.hook_bridge import RunnerBridge
    from sidecar.hook_events import IpcHookObserver
    from sidecar.permissions import PermissionBroker
    from sidecar.sdk_env import offline_env

    TrustStore().trust(v.project)
    hookset = load_hookset(v.project, registry=HookRegistry())
    assert all(len(hookset.active_for(event)) == v.hooks for event in v.events), hookset.to_listing()
    sink = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process

    async def notify(name: str, params: dict[str, Any]) -> None:
        sink.write(json.dumps({"jsonrpc": "2.0", "method": name, "params": params}, separators=(",", ":")) + "\n")
        if name == "hook_response":
            v.hook_responses += 1

    sid = str(uuid.uuid4())
    runner = HookRunner(hookset, IpcHookObserver(notify), data_dir=data_dir)
    context = SessionContext(session_id=sid, project_dir=v.project, data_dir=data_dir)
    if v.boxed:
        from sidecar import sandbox
        from sidecar.hook_box import for_session
        from sidecar.sdk_env import hook_env_names

        env = {"HOME": str(home / v.name), "PATH": os.environ["PATH"]}
        status = sandbox.decide("auto", os.environ["PATH"], (), project=v.project, cli_env=env,
                                orion_dirs=[data_dir])
        context.box = for_session(status, lambda: runner.hookset.trusted, hook_env_names(hookset.entries),
                                  lambda: runner.hookset.entries)
        if context.box is None:
            raise SystemExit(f"--boxed: no hook box here ({status.reason})")
    v.context = context

    async def no_request(method: str, params: dict[str, Any], timeout: float) -> Any:
        raise RuntimeError("no frontend in this benchmark")

    bridge = RunnerBridge(runner, context, PermissionBroker(sid, no_request, 10.0))
    config = AgentConfig(project_dir=v.project, session_id=sid, env=offline_env(url, home / v.name), allowed_tools=["Bash"])
    session = AgentSession(config, bridge, NullAsker(), ignore)
    await session.start()
    v.session, v.runner_obj, v.conversation = session, runner, "session:" + sid


async def start_cli(v: Variant, url: str, home: Path) -> None:
    from claude_agent_sdk import ClaudeSDKClient

    from sidecar.agent import AgentConfig, AgentSession
    from sidecar.sdk_env import offline_env

    sid = str(uuid.uuid4())
    config = AgentConfig(project_dir=v.project, session_id=sid, env=offline_env(url, home / v.name), allowed_tools=["Bash"],
                         setting_sources=["project"])
    # The very options the sidecar would pass, minus our two guards: the CLI reads the project's
    # settings file and runs its hooks; no SDK callbacks are registered. Hook events in the stream
    # prove the CLI ran each hook, as hook_response does for ours.
    options = replace(AgentSession(config, NoBridge(), NullAsker(), ignore).build_options(), settings=None, hooks=None,
                      include_hook_events=True)
    client = ClaudeSDKClient(options)
    await client.connect()
    v.session, v.conversation = client, "session:" + sid


async def one_turn(v: Variant) -> float | None:
    """Run one turn; returns the CLI's own duration_ms for it."""
    if v.runner == "ours":
        result = await v.session.prompt(PROMPT)
        if result.stop_reason != "end_turn":
            raise RuntimeError(f"{v.name}: turn ended {result.stop_reason}")
        return float(result.duration_ms)
    from claude_agent_sdk import ResultMessage

    await v.session.query(PROMPT)
    duration = None
    async for message in v.session.receive_response():
        if isinstance(message, ResultMessage):
            duration = float(message.duration_ms)
        elif getattr(message, "subtype", None) == "hook_response":
            v.hook_responses += 1
    return duration


def tool_phase_ms(server: Any, conversation_prefix: str, before: int) -> float | None:
    """Arrival of the turn's 2nd model request minus its 1st, for requests logged after index `before`."""
    key = conversation_prefix
    records = [r for r in server.requests[before:] if r.has_tools and r.conversation == key]
    if len(records) < 2:
        return None
    return (records[1].at - records[0].at) * 1000


def stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"median": float("nan"), "p25": float("nan"), "p75": float("nan"), "n": 0}
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return {"median": round(statistics.median(values), 2), "p25": round(q[0], 2), "p75": round(q[2], 2), "n": len(values)}


def per_hook(variants: list[Variant], runner: str, metric: str) -> dict[str, float]:
    """ms per extra hook from the medians: (N=max - N=0)/max, and N=1 - N=0."""
    by_n = {v.hooks: statistics.median(getattr(v, metric)) for v in variants if v.runner == runner and getattr(v, metric)}
    top = max(by_n)
    out = {f"n{n}": round(ms, 2) for n, ms in sorted(by_n.items())}
    if 0 in by_n and top:
        out["per_hook_slope"] = round((by_n[top] - by_n[0]) / top, 2)
    if 0 in by_n and 1 in by_n:
        out["first_hook"] = round(by_n[1] - by_n[0], 2)
    return out


async def run(reps: int, counts: list[int], root: Path, events: tuple[str, ...] = ("PreToolUse",),
              boxed: bool = False) -> dict[str, Any]:
    from hooks.executors import leftovers
    from sidecar.scripted_model import ScriptedModelServer, load_scenario

    data_dir = Path(os.environ["ORION_DATA_DIR"])
    home = root / "cli-homes"
    server = ScriptedModelServer(load_scenario(SCENARIO_FILE))
    variants = [Variant(f"{r}-{n}", r, n, write_project(root, f"{r}-{n}", n, events), events=events,
                        boxed=boxed and r == "ours")
                for n in counts for r in ("ours", "cli")]
    loadavg_start = [round(x, 2) for x in os.getloadavg()]
    bookkeeping = {v.name: [0, 0, 0] for v in variants}  # /proc reads, processes examined, hooks (ours)
    proc_reads = ProcReads()
    examined_now = lambda: getattr(getattr(leftovers, "stats", None), "examined", 0)  # noqa: E731 (older trees have none)
    async with server.running() as url:
        t0 = time.perf_counter()
        import claude_agent_sdk  # noqa: F401  (the first import is slow; keep it out of every timing)

        print(f"import claude_agent_sdk: {(time.perf_counter() - t0) * 1000:.0f} ms", file=sys.stderr)
        for v in variants:
            if v.runner == "ours":
                await start_ours(v, url, home, data_dir)
            else:
                await start_cli(v, url, home)
        try:
            for rep in range(reps + WARMUP_TURNS):
                for v in variants:
                    before = len(server.requests)
                    reads, examined, hooks_before = proc_reads.count, examined_now(), v.hook_responses
                    started = time.perf_counter()
                    cli_ms = await one_turn(v)
                    wall = (time.perf_counter() - started) * 1000
                    phase = tool_phase_ms(server, v.conversation or "", before)
                    if rep < WARMUP_TURNS:
                        continue
                    if v.runner == "ours":
                        counts_now = bookkeeping[v.name]
                        counts_now[0] += proc_reads.count - reads
                        counts_now[1] += examined_now() - examined
                        counts_now[2] += v.hook_responses - hooks_before
                    v.turn_ms.append(wall)
                    if phase is not None:
                        v.tool_phase_ms.append(phase)
                    if cli_ms is not None:
                        v.cli_reported_ms.append(cli_ms)
                print(f"  rep {rep + 1}/{reps + WARMUP_TURNS}", file=sys.stderr)
        finally:
            for v in variants:
                if v.runner == "ours":
                    await v.session.close()
                    await v.runner_obj.aclose()
                    if v.context is not None and v.context.box is not None:
                        await v.context.box.aclose()
                else:
                    await v.session.disconnect()
    result: dict[str, Any] = {"reps": reps, "events": list(events), "boxed": boxed, "variants": {},
                              "loadavg_start": loadavg_start,
                              "loadavg": [round(x, 2) for x in os.getloadavg()]}
    for v in variants:
        result["variants"][v.name] = {
            "turn_ms": stats(v.turn_ms),
            "tool_phase_ms": stats(v.tool_phase_ms),
            "cli_duration_ms": stats(v.cli_reported_ms),
            "hook_responses": v.hook_responses,
        }
        reads, examined, hooks = bookkeeping[v.name]
        if v.runner == "ours" and hooks:
            result["variants"][v.name]["per_hook"] = {"proc_reads": round(reads / hooks, 3),
                                                      "leftovers_examined": round(examined / hooks, 3)}
    by_n: dict[int, dict[str, Variant]] = {}
    for v in variants:
        by_n.setdefault(v.hooks, {})[v.runner] = v
    result["ratio_ours_to_cli"] = {
        str(n): {metric: round(statistics.median(getattr(pair["ours"], metric)) / statistics.median(getattr(pair["cli"], metric)), 2)
                 for metric in ("tool_phase_ms", "turn_ms") if getattr(pair["ours"], metric) and getattr(pair["cli"], metric)}
        for n, pair in sorted(by_n.items()) if len(pair) == 2}
    for metric in ("tool_phase_ms", "turn_ms"):
        ours, cli = per_hook(variants, "ours", metric), per_hook(variants, "cli", metric)
        result[metric] = {"ours": ours, "cli": cli}
        if cli.get("per_hook_slope"):
            result[metric]["ratio_ours_to_cli"] = round(ours["per_hook_slope"] / cli["per_hook_slope"], 2)
    return result


def print_result(result: dict[str, Any]) -> None:
    print(f"reps per variant: {result['reps']} (after {WARMUP_TURNS} warm-up turns), round-robin")
    print(f"{'variant':<10} {'tool phase median [p25-p75] ms':<34} {'whole turn median [p25-p75] ms':<34} hook_responses")
    for name, v in result["variants"].items():
        tp, tt = v["tool_phase_ms"], v["turn_ms"]
        print(f"{name:<10} {tp['median']:>8} [{tp['p25']}-{tp['p75']}]{'':<12} {tt['median']:>8} [{tt['p25']}-{tt['p75']}]{'':<12} "
              f"{v['hook_responses']}")
    print(f"events with N hooks each: {', '.join(result.get('events', ['PreToolUse']))}")
    print(f"load average at the start: {result.get('loadavg_start')}, at the end: {result.get('loadavg')}")
    for name, v in result["variants"].items():
        if "per_hook" in v:
            print(f"{name}: per hook: {v['per_hook']}")
    print("ours / cli, medians:")
    for n, ratios in result.get("ratio_ours_to_cli", {}).items():
        print(f"  N={n}: tool phase {ratios.get('tool_phase_ms')}x, whole turn {ratios.get('turn_ms')}x")
    for metric in ("tool_phase_ms", "turn_ms"):
        m = result[metric]
        print(f"{metric}: ours {m['ours']}; cli {m['cli']}; ratio ours/cli per hook: {m.get('ratio_ours_to_cli')}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--hooks", default="0,1,10", help="hook counts to compare (0 must be among them)")
    parser.add_argument("--events", default="PreToolUse", help="events that get N hooks each, comma-separated")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--boxed", action="store_true",
                        help="ours: the project's hooks in the session's hook box (as the sidecar runs them on Linux)")
    args = parser.parse_args(argv)
    counts = [int(x) for x in args.hooks.split(",")]
    events = tuple(e for e in args.events.split(",") if e)

    import warnings

    import anyio

    # The sidecar sets can_use_tool and allowed_tools together on purpose (sidecar/agent.py).
    warnings.filterwarnings("ignore", message="can_use_tool will not be invoked")
    with tempfile.TemporaryDirectory(prefix="orion-hookcost-") as tmp:
        root = Path(tmp)
        os.environ["ORION_DATA_DIR"] = str(root / "data")
        os.environ["ORION_USER_SETTINGS"] = str(root / "no-user-settings.json")
        os.environ["ORION_CLAUDE_USER_SETTINGS"] = str(root / "no-claude-user-settings.json")
        os.environ.pop("ANTHROPIC_API_KEY", None)
        result = anyio.run(run, args.reps, counts, root, events, args.boxed)
    print_result(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
