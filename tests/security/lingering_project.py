"""A project built to outlive its sidecar: a command hook that holds and starts a grandchild plus a double-forked daemon, a warm python hook, a slow prompt hook, and a background Bash command of the CLI.

Shared by tests/security/test_process_hygiene.py and bench/kill9_leftovers.py.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SCENARIO = HERE / "scenarios" / "lingering.yaml"
PROMPT = "start the lingering work"
HOLD_S = 120  # what the processes sleep: long against the seconds the test allows, bounded if everything fails

# The command hook (PostToolUse on Bash): starts a grandchild in its own session (it leaves the hook's process
# group) and a daemon by double fork (reparented away from the sidecar's tree), records their pids, holds.
LINGER_HOOK = f"""
import json, os, subprocess, sys, time
state = os.path.join(os.environ["CLAUDE_PROJECT_DIR"], ".linger")
os.makedirs(state, exist_ok=True)
sleeper = [sys.executable, "-S", "-c", "import time; time.sleep({HOLD_S})"]
grandchild = subprocess.Popen(sleeper, start_new_session=True, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.dup2(os.open(os.devnull, os.O_RDWR), 0); os.dup2(0, 1); os.dup2(0, 2)
        os.write(w, str(os.getpid()).encode()); os.close(w)
        os.execv(sys.executable, sleeper)
    os._exit(0)
os.close(w)
daemon = int(os.read(r, 32) or 0)
with open(os.path.join(state, "pids.json"), "w") as fh:
    json.dump({{"hook": os.getpid(), "grandchild": grandchild.pid, "daemon": daemon,
               "ns": os.readlink("/proc/self/ns/pid")}}, fh)
print("holding", file=sys.stderr, flush=True)
time.sleep({HOLD_S})
"""

PY_HOOK = "def run(payload):\n    return None\n"


def settings(python: str) -> dict[str, Any]:
    hook_cmd = f'{python} -S "$CLAUDE_PROJECT_DIR/.claude/hooks/linger.py"'
    return {
        "hooks": {
            "PostToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {"type": "command", "name": "linger", "command": hook_cmd, "timeout": 600},
                        {"type": "python", "name": "warm-python", "script": "noop_hook.py", "timeout": 30},
                        {"type": "prompt", "name": "slow-judge", "prompt": "Judge this: $ARGUMENTS", "timeout": 600},
                    ],
                }
            ]
        }
    }


def make_project(root: Path, python: str = sys.executable) -> Path:
    """Write the project under `root`/lingering and return its path."""
    project = root / "lingering"
    hooks = project / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "linger.py").write_text(LINGER_HOOK)
    (hooks / "noop_hook.py").write_text(PY_HOOK)
    (project / ".claude" / "settings.json").write_text(json.dumps(settings(python), indent=2))
    return project


def recorded_pids(project: Path) -> dict[str, int]:
    """The pids the hook wrote ({} until it has run that far), as this machine's /proc numbers them: a project's hook
    runs in the session's hook box (sidecar/hook_box.py), a PID namespace of its own, and writes the box's numbers."""
    try:
        recorded = json.loads((project / ".linger" / "pids.json").read_text())
    except (OSError, ValueError):
        return {}
    ns = recorded.pop("ns", None)
    if ns is None or ns == os.readlink("/proc/self/ns/pid"):
        return recorded
    return {key: host for key, pid in recorded.items() if (host := _host_pid(ns, pid)) is not None}


def _host_pid(ns: str, pid: int) -> int | None:
    """The host's number of process `pid` of PID namespace `ns` (the last NSpid field is the innermost number)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{name}/ns/pid") != ns:
                continue
            with open(f"/proc/{name}/status") as fh:
                line = next(line for line in fh if line.startswith("NSpid:"))
        except (OSError, StopIteration):
            continue
        if int(line.split()[-1]) == pid:
            return int(name)
    return None


def session_params(project: Path) -> dict[str, Any]:
    return {"projectDir": str(project), "model": f"scripted:{SCENARIO}", "allowedTools": ["Bash"]}


def env_for(data_dir: Path, log_dir: Path, repo_root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["ORION_DATA_DIR"] = str(data_dir)
    env["ORION_SCRIPTED_LOG_DIR"] = str(log_dir)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo_root), env.get("PYTHONPATH")]))
    return env
