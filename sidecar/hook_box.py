"""Command hooks that run a project's code, each inside a box of its own built from the session's boundary (Linux).

A hook is a program, and a program can run anything in the project: `tools/gate`, `npm run lint`, a module a pinned
script imports. Trust reviews what a project brings when the user trusts it; the agent can change the project's
files after that (they are writable in its box), and a hook run outside any boundary would run those changes with
everything the user's account can reach. So the hooks that run a project's code run inside the same boundary the
agent has (sidecar/boundary.py: the project writable, the rest read-only, secrets and Orion's state hidden, network
only through Orion's proxy), in a box of their own:

- which hooks: every command hook from a project's sources (its settings files, its local settings, the plugins it
  enables, hooks/hookset.py TRUST_SOURCES), and, while the project is not trusted, every command hook whatever its
  source (a user's `npx prettier --check .` runs an untrusted project's code). A user's own hooks in a project the
  user trusted run outside, as before: they are the user's tools (a memory plugin's worker writes the user's home);
- a box of its own per hook, not the agent's: the agent's commands can neither see nor signal a hook's processes
  (a sibling PID namespace), nor change what it answers;
- the session's boundary plan, with the CLI's config dir writable (CLAUDE_ENV_FILE) and a `/tmp` of the session's
  own that boxed hooks share from one run to the next (hooks keep state there) and nothing else sees;
- the environment allow-listed as the CLI's is (sidecar/sdk_env.py), without the model's credential: the hook's
  own variables (CLAUDE_PROJECT_DIR, the settings' env, a plugin's root), the payload, the locale and the paths;
- what a boxed hook starts to outlive it ends with the hook (its box's PID namespace ends), not with the session.

Cost: one bubblewrap start per boxed hook (bench/RESULTS.md). docs/SECURITY.md "Hooks inside the boundary".
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from hooks.executors.leftovers import MARKER_VAR
from sidecar import boundary as box_mod
from sidecar.sdk_env import CLI_ENV_NAMES, PASS_VAR, RUN_TOKEN_VAR

# The hook's own variables (hooks/executors/command.py) pass; the model's credential and Orion's never do.
_HOOK_PREFIXES = ("LC_", "CLAUDE_")
_NEVER = ("ANTHROPIC_", "ORION_", "CLAUDE_CODE_OAUTH_TOKEN")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
TMP_INSIDE = "/tmp"


class HookBox:
    """One session's boxed hooks: which hooks go in (`covers`) and how one starts inside (`launch`). The box's
    folder, its `/tmp` and its proxy relay are made on first use and removed by `close()`."""

    def __init__(self, boundary: Any, trusted: Callable[[], bool], sources: Iterable[str],
                 withheld: Iterable[str] = ()) -> None:
        self.boundary = boundary
        self._trusted = trusted
        self._sources = frozenset(sources)
        self._withheld = frozenset(withheld)
        self._lock = threading.Lock()
        self._box: box_mod.Box | None = None
        self._args: list[str] = []
        self._tmp = ""
        self._count = 0
        self.closed = False

    def covers(self, spec: Any) -> bool:
        """Whether this hook runs inside: a project's own, or any while the project is not trusted."""
        return getattr(spec, "source", None) in self._sources or not self._trusted()

    def _open(self) -> None:
        """Blocking (a folder, the proxy relay's socket): the first boxed hook of the session waits for it."""
        with self._lock:
            if self._box is not None:
                return
            if self.closed:
                raise RuntimeError("the session's hook box is closed")
            # No model endpoint: hooks do not talk to the model (prompt and agent hooks run in the sidecar).
            plan = dataclasses.replace(self.boundary.plan, model_endpoint=None)
            boundary = dataclasses.replace(self.boundary, plan=plan, shield="", credential=None)
            box = box_mod.Box.open_for_hooks(boundary)
            self._tmp = os.path.join(box.dir, "tmp")
            os.mkdir(self._tmp, 0o700)
            args = plan.bwrap_args(os.path.join(box.dir, "empty"), os.path.join(box.dir, "net"), None,
                                   tmp_dir=self._tmp, as_pid_1=False)
            assert args[-2] == "--chdir"
            self._args = args[:-2]  # each hook's own working directory goes in its place
            self._box = box

    async def launch(self, argv: list[str], cwd: Path, env: Mapping[str, str], payload_file: bytes | None
                     ) -> tuple[list[str], dict[str, str]]:
        """The argv and environment that start `argv` inside (through sidecar/cli_exec.sh, which keeps only the
        allow-listed variables and hands bubblewrap its arguments). `payload_file`: a payload too big for the
        environment, written into the box's /tmp (HOOK_PAYLOAD_FILE names it as the hook sees it)."""
        import anyio

        if self._box is None:
            await anyio.to_thread.run_sync(self._open)
        box = self._box
        assert box is not None
        with self._lock:
            self._count += 1
            n = self._count
        env = dict(env)
        if payload_file is not None:
            name = f"orion-hook-{n}.json"
            fd = os.open(os.path.join(self._tmp, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(payload_file)
            env["HOOK_PAYLOAD_FILE"] = f"{TMP_INSIDE}/{name}"
        args_file = os.path.join(box.dir, f"hook-{n}.args")
        data = b"".join(a.encode() + b"\0" for a in (*self._args, "--chdir", str(cwd)))
        fd = os.open(args_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        keep = sorted(name for name in env if self._passes(name, env))
        launch = {**{name: env[name] for name in keep},
                  "ORION_CLI_EXEC_REAL": argv[0], "ORION_CLI_ENV_KEEP": " ".join(keep),
                  "ORION_CLI_BOX": args_file, "ORION_CLI_BOX_EXEC": self.boundary.launcher,
                  "ORION_CLI_BOX_KIND": "bwrap", "ORION_CLI_BOX_INIT": str(box_mod.BOX_INIT),
                  "ORION_CLI_BOX_SOCAT": self.boundary.socat, "ORION_CLI_BOX_SHIELD": "-",
                  "ORION_CLI_BOX_RELAY": f"{self.boundary.plan.proxy_port}={box.relays.proxy_socket}"}
        from sidecar.agent import CLI_EXEC

        return [str(CLI_EXEC), *argv[1:]], launch

    def _passes(self, name: str, env: Mapping[str, str]) -> bool:
        if not _NAME.match(name) or name in self._withheld:
            return False
        if name in (MARKER_VAR, RUN_TOKEN_VAR):  # markers the leftover sweeps find processes by; no secret
            return True
        if name.startswith(_NEVER):
            return False
        extra = set(re.split(r"[\s,]+", os.environ.get(PASS_VAR, "")))
        return (name in CLI_ENV_NAMES or name in extra or name.startswith(_HOOK_PREFIXES)
                or name in ("HOOK_PAYLOAD", "HOOK_PAYLOAD_FILE", "HOOK_EVENT", "HOOK_TIMEOUT", "SESSION_ID"))

    def close(self) -> None:
        """Blocking: the relay and the folder (its /tmp with it). Hooks must have ended."""
        with self._lock:
            self.closed = True
            box, self._box = self._box, None
        if box is not None:
            box.close()


def for_session(sandbox: Any, trusted: Callable[[], bool], withheld: Iterable[str] = ()) -> HookBox | None:
    """The session's hook box, when its boundary is bubblewrap's (None: hooks run as before, and the session's
    sandbox report says why there is no boundary)."""
    from hooks.hookset import TRUST_SOURCES

    boundary = getattr(sandbox, "boundary", None)
    if boundary is None or boundary.platform != "linux" or shutil.which(boundary.launcher) is None:
        return None
    return HookBox(boundary, trusted, TRUST_SOURCES, withheld)
