"""env-isolation through the CLI's own shell prefix: the agent's commands run without the sidecar's internal
variables, and the command the CLI judges is the one the agent wrote.

The CLI runs every Bash command it composes, and every stdio MCP server, through `CLAUDE_CODE_SHELL_PREFIX` when
that is set (measured on 2.1.330: `<prefix> '<the whole composed command>'`). Orion's prefix is `shell_prefix.sh`:
it unsets the names in `ORION_SHELL_UNSET` and runs the command line in `CLAUDE_CODE_SHELL`, the shell the CLI
itself picks (`cli_shell` computes the CLI's own choice and the session pins it, so the two cannot differ).

Why this and not a rewrite of the command (`unset …; <command>`, built-in env-isolation's PreToolUse answer, still
the fallback): the CLI judges a rewritten command as a new one, so its read-only commands and the settings' allow
rules stopped applying and every Bash call asked (docs/FIDELITY.md).

Why it holds (docs/SECURITY.md "Guards"):
- its variables are in the CLI's *flag* settings `env`, which outrank the user's, the project's and the local
  settings' `env` (measured: a project's `CLAUDE_CODE_SHELL_PREFIX: ""`, another shell or an empty list of names
  does not undo them), and the CLI's command line is not the agent's to change;
- inside an OS boundary the prefix is a file the agent cannot change or put something else in place of, by any
  path: inside a Linux boundary it is bound read-only at `INSIDE_PATH`, under the box's `/run`, which is remounted
  read-only (a file in a writable tree could be swapped by renaming a folder above it, whatever its own mount
  says); inside a macOS boundary the package's own file is used only when no folder above it is one the session
  can write (`outside_path`), else the session falls back to the rewrite;
- without a boundary (`sandbox: "off"`, or none on this machine) the package's own file is used (`unconfined_path`):
  the commands there run as the user, unconfined, and can read the CLI's own environment (`/proc/<cli>/environ`,
  `ps eww`: tests/security/test_boundary.py) and change any file the user owns, the sidecar's own code included.
  No place is out of their reach and none is needed: env-isolation there keeps the variables out of what a command
  prints or passes on by accident, and the rewrite it replaced held no more against a command that looks for them.

An organization's managed settings that set `CLAUDE_CODE_SHELL_PREFIX` outrank the flag settings (measured on
2.1.330: the managed wrapper ran, Orion's did not), so Orion's prefix would never run (`managed_prefix`). The CLI
still starts every shell it uses through `CLAUDE_CODE_SHELL` (its start-up shells, and each command as
`<shell> -c "'<managed prefix>' '<command line>'"`, measured), so then Orion's *shell* is `shell_wrapper.sh`, which
takes the names out and becomes the real shell: the organization's prefix gets the command as in Claude Code, and
nothing it starts sees the names. The CLI tells bash from zsh by the shell's file name, so the wrapper is placed as
`orion-bash.sh` / `orion-zsh.sh` (`wrapper_path`), where the prefix would be. A stdio MCP server the CLI starts
through the managed prefix is not covered (the CLI starts it as `<prefix> '<command>'`, without a shell).

`ORION_SHELL_PREFIX=0` in the sidecar's environment (the launcher's switch, nothing a project or the agent reaches)
makes env-isolation rewrite instead, everywhere: it isolates as well, and every Bash call is asked about.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

PREFIX_SCRIPT = Path(__file__).resolve().parent / "shell_prefix.sh"
# The shell wrapper, under the two names the CLI reads as bash and zsh (links to shell_wrapper.sh in the package).
WRAPPER_SCRIPT = Path(__file__).resolve().parent / "shell_wrapper.sh"
WRAPPER_NAMES = {"bash": "orion-bash.sh", "zsh": "orion-zsh.sh"}
# Where the prefix is inside a Linux boundary: under the box's hidden /run (sidecar/boundary.py), remounted
# read-only after the bind, so neither the file nor a folder above it can be renamed, replaced or chmod-ed.
RUN_DIR = "/run"
INSIDE_PATH = "/run/orion-shell/prefix"
INSIDE_DIR = "/run/orion-shell"
# Variables the prefix itself brings into the CLI's environment, taken out with the rest.
OWN_NAMES = ("CLAUDE_CODE_SHELL", "CLAUDE_CODE_SHELL_PREFIX", "ORION_SHELL_UNSET", "ORION_SHELL_NEXT", "ORION_SHELL_REAL")
# Pinned empty whenever env-isolation is on (flag_env says why).
PINNED = {"BASH_ENV": ""}
# The launcher's switch: "0" (or false/no/off) makes env-isolation rewrite the commands instead of the prefix.
SWITCH = "ORION_SHELL_PREFIX"
_SHELL_DIRS = ("/bin", "/usr/bin", "/usr/local/bin", "/opt/homebrew/bin")


def cli_shell(env: Mapping[str, str]) -> str | None:
    """The shell the CLI would run commands in with environment `env` (2.1.330's rule, read in its code): `SHELL`
    when it names bash or zsh; then, bash first when `SHELL` is bash, else zsh first, the one on `PATH`, each in
    /bin, /usr/bin, /usr/local/bin, /opt/homebrew/bin, the other on `PATH`; the first that can be run. None: the
    CLI would find none either (it refuses to start)."""
    shell = env.get("SHELL") or ""
    path = env.get("PATH") or os.defpath
    bash_first = os.path.basename(shell) == "bash"
    order = ("bash", "zsh") if bash_first else ("zsh", "bash")
    candidates = [shell] if ("bash" in shell or "zsh" in shell) else []
    candidates.append(shutil.which(order[0], path=path) or "")
    candidates += [f"{d}/{name}" for name in order for d in _SHELL_DIRS]
    candidates.append(shutil.which(order[1], path=path) or "")
    for candidate in candidates:
        if candidate and os.path.isabs(candidate) and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def outside_path(writable: Iterable[str]) -> str | None:
    """The package's prefix script for a session inside a macOS boundary, when the session can change neither it nor
    a folder above it (renaming one would put another file at its path): none lies in the boundary's writable places
    `writable`. None otherwise: the rewrite stays."""
    script = unconfined_path()
    if script is None:
        return None
    chain = [script, *(str(p) for p in Path(script).parents)]
    places = [w.rstrip("/") or "/" for w in writable]
    if any(p == w or w == "/" or p.startswith(w + "/") for p in chain for w in places):
        return None
    return script


def unconfined_path() -> str | None:
    """The package's prefix script, for a session without a boundary (the module's docstring says why any place
    does there); None when it cannot be run (an install that lost the file's mode would fail every command) or its
    path is not one the CLI hands to a shell whole (it reads what follows a " -" in a prefix as the prefix's options)."""
    script = os.path.realpath(PREFIX_SCRIPT)
    if sys.platform == "win32" or " -" in script or not os.access(script, os.X_OK):
        return None
    return script


def flag_env(prefix: str, shell: str, names: Iterable[str], own_prefix: str | None = None) -> dict[str, str]:
    """The CLI's flag settings `env` that isolates every command it runs: the prefix, the shell it runs them in,
    the names it takes out (the prefix's own included) and, when the user has a prefix of their own, the line that
    runs it after them, as the CLI would run it (hooks/executors/command.py's `shell_prefix_line`, which runs the
    user's shell-form hooks through it too).

    `BASH_ENV` is pinned empty (and taken out of the commands' environment): the CLI starts a shell of its own
    before any command (its environment snapshot), which would source a file a settings `env` names there with all
    of the CLI's variables in reach (measured with a trusted project's `env`); a deliberate difference."""
    unset = sorted(set(names) | set(OWN_NAMES) | set(PINNED))
    env = {"CLAUDE_CODE_SHELL_PREFIX": prefix, "CLAUDE_CODE_SHELL": shell, "ORION_SHELL_UNSET": " ".join(unset),
           **PINNED}
    if own_prefix and own_prefix.strip():
        from hooks.executors.command import shell_prefix_line

        env["ORION_SHELL_NEXT"] = shell_prefix_line(own_prefix)
    return env


def bwrap_args(hidden_dirs: Iterable[str]) -> list[str]:
    """bubblewrap's options that put the prefix at INSIDE_PATH and the shell wrapper beside it under both its names
    (after every other mount); [] when the plan does not hide /run (then the session falls back to the rewrite)."""
    if RUN_DIR not in hidden_dirs:
        return []
    wrappers = [arg for name in WRAPPER_NAMES.values() for arg in ("--ro-bind", str(WRAPPER_SCRIPT),
                                                                    f"{INSIDE_DIR}/{name}")]
    return ["--ro-bind", str(PREFIX_SCRIPT), INSIDE_PATH, *wrappers, "--remount-ro", RUN_DIR]


def wrapper_flag_env(wrapper: str, shell: str, names: Iterable[str]) -> dict[str, str]:
    """The CLI's flag settings `env` when a managed prefix outranks Orion's: the shell wrapper as the CLI's shell, the
    real shell it becomes, and the names it takes out (BASH_ENV pinned as with the prefix)."""
    unset = sorted(set(names) | set(OWN_NAMES) | set(PINNED))
    return {"CLAUDE_CODE_SHELL": wrapper, "ORION_SHELL_REAL": shell, "ORION_SHELL_UNSET": " ".join(unset), **PINNED}


def wrapper_path(boundary: object | None, shell: str) -> str | None:
    """Where the session's CLI finds the shell wrapper under the name that tells the CLI what `shell` is (None: the
    rewrite stays): inside a Linux boundary, bound read-only beside the prefix; without one, the package's link,
    by the same reasoning as `unconfined_path`; inside a macOS boundary, where the prefix could be."""
    kind = "zsh" if "zsh" in os.path.basename(shell) else "bash" if "bash" in os.path.basename(shell) else None
    if kind is None or prefix_path(boundary) is None:
        return None
    if boundary is not None and getattr(boundary, "platform", "") == "linux":
        return f"{INSIDE_DIR}/{WRAPPER_NAMES[kind]}"
    link = WRAPPER_SCRIPT.parent / WRAPPER_NAMES[kind]
    path = str(link.parent.resolve() / link.name)  # the link's own name: the CLI reads the kind from it
    return path if " -" not in path and os.access(path, os.X_OK) else None


def prefix_path(boundary: object | None) -> str | None:
    """Where the session's CLI finds the prefix (None: nowhere the agent could not change; the rewrite stays).
    `boundary` is the session's sidecar.boundary.Boundary, or None for a session without one."""
    if boundary is None:
        return unconfined_path()
    plan = getattr(boundary, "plan")
    if getattr(boundary, "platform", "") == "linux":
        # An install that lost the file's mode (a data file need not keep it) would fail every command: rewrite then.
        return INSIDE_PATH if bwrap_args(plan.hidden_dirs) and os.access(PREFIX_SCRIPT, os.X_OK) else None
    # macOS: the Seatbelt profile's writable places (BoxPlan.seatbelt_profile) besides the plan's own.
    return outside_path([*plan.writable, "/private/tmp", "/private/var/folders", "/tmp", "/var/folders"])


def seen_in_box(prefix: str, boundary: object | None) -> bool:
    """Whether a user's prefix can run inside the session's Linux boundary: its program (the part before the last
    " -", as the CLI cuts it) is not in a folder or file the box hides, nor in the host's /tmp (the box has its own).
    True without a Linux boundary, and for a program named without a path (found on the box's PATH)."""
    if boundary is None or getattr(boundary, "platform", "") != "linux":
        return True
    cut = prefix.rfind(" -")
    program = (prefix[:cut] if cut > 0 else prefix).strip()
    if not os.path.isabs(program):
        return True
    plan = getattr(boundary, "plan")
    real = os.path.realpath(program)
    hidden = [*plan.hidden_dirs, *plan.hidden_files, "/tmp"]
    return not any(p == h or p.startswith(h.rstrip("/") + "/") for p in (program, real) for h in hidden)


def managed_prefix(files: Iterable[Path] | None = None) -> str | None:
    """The `CLAUDE_CODE_SHELL_PREFIX` of the organization's managed settings (`managed-settings.json`, then its
    drop-ins, a later file winning), which outranks Orion's flag settings; None when they set none."""
    from sidecar.credentials import managed_value

    value = managed_value("env", "CLAUDE_CODE_SHELL_PREFIX", files=files, of_type=str)
    return (value or "").strip() or None


def session_flag_env(registry: Iterable[object], boundary: object | None, cli_env: Mapping[str, str],
                     environ: Mapping[str, str] | None = None, own_prefix: str | None = None,
                     managed: str | None = None) -> dict[str, str] | None:
    """The flag settings `env` of a session whose hook set runs built-in env-isolation (None: it is off). With the
    prefix, when it has a place (`prefix_path`) and the launcher did not switch it off (`SWITCH`): `flag_env`; when a
    managed settings' prefix (`managed`, from `managed_prefix`) outranks it, the shell wrapper (`wrapper_flag_env`);
    without either, env-isolation rewrites and this only pins BASH_ENV. The names are env-isolation's own (its options, then the sidecar's variables under its
    prefixes). `own_prefix`: the user's own prefix (`users_own_prefix`), which runs after Orion's."""
    from hooks.builtin.env_isolation import INTERNAL_ENV_PREFIXES, INTERNAL_ENV_VARS, names_to_unset

    hook = next((h for h in registry if getattr(h, "builtin", False) and getattr(h, "name", "") == "env-isolation"),
                None)
    if hook is None:
        return None
    options = getattr(getattr(hook, "fn", None), "options", None) or {}
    names = tuple(options.get("names", INTERNAL_ENV_VARS)) + tuple(options.get("extra_names", ()))
    prefixes = tuple(options.get("prefixes", INTERNAL_ENV_PREFIXES))
    environ = os.environ if environ is None else environ
    switched_off = environ.get(SWITCH, "").strip().lower() in ("0", "false", "no", "off")
    shell = cli_shell(cli_env)
    if switched_off or shell is None:
        return dict(PINNED)  # env-isolation rewrites; the CLI's start-up shell still sources no BASH_ENV
    if managed:
        wrapper = wrapper_path(boundary, shell)
        return wrapper_flag_env(wrapper, shell, names_to_unset(environ, names, prefixes)) if wrapper else dict(PINNED)
    prefix = prefix_path(boundary)
    if prefix is None:
        return dict(PINNED)
    return flag_env(prefix, shell, names_to_unset(environ, names, prefixes), own_prefix)


def users_own_prefix(sources: Iterable[str], cli_env: Mapping[str, str]) -> str | None:
    """The user's own `CLAUDE_CODE_SHELL_PREFIX`, which the session's CLI would run without Orion's: their Claude Code
    settings' `env` (when the CLI reads them), else the environment the CLI was started with (the settings' `env`
    outranks it in the CLI too). Orion's flag settings take its place, so Orion's prefix runs it after taking its
    names out (`flag_env`): the user's wrapper runs as in Claude Code."""
    from hooks.paths import claude_user_settings_path
    from hooks.settings_env import env_block

    if "user" in sources:
        own = env_block(claude_user_settings_path()).get("CLAUDE_CODE_SHELL_PREFIX", "").strip()
        if own:
            return own
    return (cli_env.get("CLAUDE_CODE_SHELL_PREFIX") or "").strip() or None
