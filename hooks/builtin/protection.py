"""`protection`: deny writes to sensitive files and destructive shell commands; advise on lockfile edits."""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from hooks.builtin.common import BuiltinEnv, Options, context, deny
from hooks.types import HookContext, HookFunction, HookOutput

FILE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")

# `.env` templates hold placeholders and are meant to be committed: writing them is allowed.
ENV_TEMPLATE_SUFFIXES = (".example", ".sample", ".template", ".dist", ".defaults")

PRIVATE_KEY_NAMES = frozenset({"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk"})
PRIVATE_KEY_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk", ".gpg", ".asc")
CREDENTIAL_NAMES = frozenset(
    {".netrc", ".pgpass", ".npmrc", ".pypirc", ".git-credentials", ".htpasswd", "credentials", "credentials.json",
     "secrets.json", "secrets.yaml", "secrets.yml", "service-account.json", ".dockercfg", ".envrc"}
)
# Directories whose every file is a credential.
CREDENTIAL_DIRS = (".ssh", ".gnupg", ".aws", ".kube", ".docker", ".azure", ".config/gcloud")

SYSTEM_DIRS = (
    "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/dev", "/proc", "/sys",
    "/root", "/var/lib", "/var/log", "/opt/homebrew", "/System", "/Library", "/private/etc", "/private/var/db",
)

LOCKFILES = frozenset(
    {"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb", "poetry.lock",
     "Pipfile.lock", "uv.lock", "pdm.lock", "Cargo.lock", "Gemfile.lock", "composer.lock", "go.sum", "mix.lock",
     "packages.lock.json", "flake.lock"}
)

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "ash", "python", "python3", "perl",
                    "ruby", "node", "php"})
DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c"})
WRAPPERS = frozenset({"sudo", "doas", "env", "command", "nohup", "time", "nice", "exec", "xargs", "busybox"})
DISK_DEVICE = re.compile(r"/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d)")
FORK_BOMB = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]{0,30})\(\)\{\1\|\1&\};\1")
# `bash <(curl ...)` and `sh -c "$(wget ...)"`: a download fed to a shell without a pipe.
SUBST_DOWNLOAD = re.compile(r"(?:<\(|\$\(|`)\s{0,5}(?:curl|wget|fetch)\b")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)
HARMLESS_DEVICES = ("/dev/null", "/dev/tty", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/fd/", "/dev/shm/")
_PUNCTUATION = frozenset(";&|()<>")
_REDIRECT_CHARS = frozenset("<>&")
REDIRECTS = frozenset({">", ">>", "&>", "&>>", ">|"})


@dataclass(slots=True, frozen=True)
class Verdict:
    deny: str | None = None
    advice: str | None = None


def _normalise(path: str, cwd: str) -> str:
    expanded = os.path.expanduser(path) if path.startswith("~") else path
    if not posixpath.isabs(expanded):
        expanded = posixpath.join(cwd, expanded)
    return posixpath.normpath(expanded)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def sensitive_file_reason(path: str, cwd: str) -> str | None:
    """Why writing `path` is denied, or None. Pure string logic: no file-system access."""
    full = _normalise(path, cwd)
    pure = PurePosixPath(full)
    name = pure.name
    lower = name.lower()
    if lower == ".env" or (lower.startswith(".env.") and not lower.endswith(ENV_TEMPLATE_SUFFIXES)):
        return f"{name} holds environment secrets"
    if lower.endswith(".env") and lower != ".env" and not lower.endswith(ENV_TEMPLATE_SUFFIXES):
        return f"{name} holds environment secrets"
    if name in PRIVATE_KEY_NAMES or lower.endswith(PRIVATE_KEY_SUFFIXES):
        return f"{name} looks like a private key or certificate store"
    if lower in CREDENTIAL_NAMES or (lower.startswith("service-account") and lower.endswith(".json")):
        return f"{name} is a credentials file"
    parts = pure.parts
    if ".git" in parts[:-1]:
        return "files inside .git are git's internal state (config, hooks, objects)"
    home = os.path.expanduser("~")
    for cred in CREDENTIAL_DIRS:
        if _under(full, posixpath.join(home, cred)) or f"/{cred}/" in full:
            return f"{cred}/ holds credentials"
    for sysdir in SYSTEM_DIRS:
        if _under(full, sysdir):
            return f"{sysdir} is a system directory"
    return None


# Text shlex would split exactly like str.split(): no quotes, escapes, operators, or whitespace other than space and tab.
_PLAIN_WORDS = re.compile(r"[A-Za-z0-9_\-./=,:@%+~$*{}?\[\]!^ \t]*")


def _split_commands(command: str) -> list[list[str]] | None:
    """Simple commands (argv lists) in order, with pipe markers kept as ["|"]; None when it does not tokenize."""
    if _PLAIN_WORDS.fullmatch(command):
        # Most agent commands are one plain simple command; shlex costs tens of µs per call for the same answer.
        words = command.split()
        return [words] if words else []
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = ""
        tokens = list(lexer)
    except ValueError:
        return None
    commands: list[list[str]] = [[]]
    for tok in tokens:
        is_redirect = set(tok) <= _REDIRECT_CHARS and ("<" in tok or ">" in tok)
        if tok and set(tok) <= _PUNCTUATION and not is_redirect:
            # A run of operators such as `)|` or `<(` ends the simple command; a lone `|` pipes into the next.
            commands.append(["|"] if "|" in tok.replace("||", "") else [])
            commands.append([])
            continue
        commands[-1].append(tok)
    return [c for c in commands if c]


def _strip_wrappers(argv: list[str]) -> list[str]:
    """The argv of the program actually run: `sudo -E FOO=1 env rm ...` -> `rm ...`."""
    i = 0
    while i < len(argv):
        if _ASSIGNMENT.fullmatch(argv[i]):
            i += 1
        elif posixpath.basename(argv[i]) in WRAPPERS:
            i += 1
            while i < len(argv) and argv[i].startswith("-"):
                i += 1
        else:
            break
    return argv[i:]


def _dangerous_target(arg: str, cwd: str) -> bool:
    if arg in ("/", "/*", "/.", "/..", "~", "~/", "~/*", "$HOME", "${HOME}", "$HOME/", "$HOME/*", "${HOME}/", "${HOME}/*"):
        return True
    if not arg.startswith(("/", "~")):
        return False
    full = _normalise(arg.rstrip("*") or "/", cwd)
    if full == "/" or full == os.path.expanduser("~"):
        return True
    # A top-level directory (`/home`, `/tmp`, `/var`) or anything in a system directory.
    if full.count("/") == 1:
        return True
    return any(_under(full, d) for d in SYSTEM_DIRS)


def _flags(argv: list[str]) -> str:
    short = "".join(a[1:] for a in argv if a.startswith("-") and not a.startswith("--"))
    long = " ".join(a for a in argv if a.startswith("--"))
    return short + " " + long


def _check_simple(argv: list[str], cwd: str) -> str | None:
    argv = _strip_wrappers(argv)
    if not argv:
        return None
    prog = posixpath.basename(argv[0])
    args = argv[1:]
    flags = _flags(args)
    operands = [a for a in args if not a.startswith("-")]
    if "--no-preserve-root" in args:
        return "it disables the safeguard against deleting or changing the root directory (--no-preserve-root)"
    if prog == "rm" and ("r" in flags.split(" ")[0].lower() or "--recursive" in flags):
        bad = [a for a in operands if _dangerous_target(a, cwd)]
        if bad:
            return f"it recursively deletes {bad[0]}, which would destroy the system or the home directory"
    if prog in ("chmod", "chown", "chgrp") and ("R" in flags.split(" ")[0] or "--recursive" in flags):
        bad = [a for a in operands[1:] if _dangerous_target(a, cwd)]
        if bad:
            return f"it recursively changes ownership or permissions of {bad[0]}"
    if prog == "dd":
        for a in args:
            if a.startswith("of=") and DISK_DEVICE.match(a[3:]):
                return f"it writes raw data onto the disk device {a[3:]}"
    if prog.startswith("mkfs") or prog in ("fdisk", "sfdisk", "parted", "wipefs"):
        if any(DISK_DEVICE.match(a) for a in operands):
            return "it reformats or repartitions a disk"
    if prog in ("shutdown", "reboot", "halt", "poweroff"):
        return "it shuts down or restarts the machine"
    return None


def _redirect_targets(argv: list[str]) -> list[str]:
    targets = []
    for i, tok in enumerate(argv):
        if tok in REDIRECTS and i + 1 < len(argv):
            targets.append(argv[i + 1])
    return targets


# env-isolation's own `unset NAME ... 2>/dev/null; ` prefix (names only, nothing else can hide in it) is
# skipped: tokenising a hundred variable names per Bash call was a quarter of the guard's cost under load.
_ISOLATION_PREFIX = re.compile(r"unset(?: [A-Za-z_][A-Za-z0-9_]*)+ 2>/dev/null; ")


def _without_isolation_prefix(command: str) -> str:
    match = _ISOLATION_PREFIX.match(command)
    return command[match.end():] if match else command


def dangerous_command_reason(command: str, cwd: str) -> str | None:
    """Why this Bash command is denied, or None.

    shlex treats a newline as plain whitespace, so each line is also checked on
    its own: `echo ok<newline>rm -rf /` must not hide behind the `echo`.
    """
    command = _without_isolation_prefix(command)
    reason = _command_reason(command, cwd)
    if reason is None and "\n" in command:
        for line in command.splitlines():
            reason = _command_reason(line, cwd)
            if reason:
                break
    return reason


def _command_reason(command: str, cwd: str) -> str | None:
    squashed = "".join(command.split())
    if FORK_BOMB.search(squashed):
        return "it is a fork bomb that would exhaust the machine's processes"
    commands = _split_commands(command)
    if commands is None:
        commands = [command.split()]
    if SUBST_DOWNLOAD.search(command) and any(
        posixpath.basename(t) in SHELLS for argv in commands for t in _strip_wrappers(argv)[:1]
    ):
        return "it runs a script downloaded from the network without letting anyone read it first"
    saw_download = False
    piped = False
    for argv in commands:
        if argv == ["|"]:
            piped = True
            continue
        stripped = _strip_wrappers(argv)
        prog = posixpath.basename(stripped[0]) if stripped else ""
        if piped and saw_download and prog in SHELLS:
            return "it pipes a download straight into a shell, running code nobody has read"
        if prog in DOWNLOADERS:
            saw_download = True
        elif not piped:
            saw_download = False
        piped = False
        reason = _check_simple(argv, cwd)
        if reason:
            return reason
        for target in _redirect_targets(argv) + (stripped[1:] if prog == "tee" else []):
            if target.startswith("-"):
                continue
            if DISK_DEVICE.match(target):
                return f"it writes raw data onto the disk device {target}"
            why = None if target.startswith(HARMLESS_DEVICES) else sensitive_file_reason(target, cwd)
            if why:
                return f"it writes to {target}: {why}"
    return None


def evaluate(payload: dict[str, Any], cwd: str) -> Verdict:
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input") or {}
    if tool == "Bash":
        command = tool_input.get("command")
        if isinstance(command, str):
            reason = dangerous_command_reason(command, cwd)
            if reason:
                return Verdict(deny=f"Blocked by Orion's protection hook: this command is not allowed because {reason}.")
        return Verdict()
    if tool in FILE_TOOLS:
        path = tool_input.get("file_path") or tool_input.get("notebook_path")
        if not isinstance(path, str) or not path:
            return Verdict()
        reason = sensitive_file_reason(path, cwd)
        if reason:
            return Verdict(
                deny=f"Blocked by Orion's protection hook: {tool} to {path} is not allowed because {reason}. "
                "Ask the user to make this change themselves if it is really needed."
            )
        if PurePosixPath(path).name in LOCKFILES:
            return Verdict(
                advice=f"{PurePosixPath(path).name} is a generated lockfile. Prefer changing the dependency "
                "manifest and running the package manager over editing the lockfile by hand."
            )
    return Verdict()


def make_protection(opts: Options, env: BuiltinEnv) -> HookFunction:
    allow_paths = tuple(opts.get("allow_paths", ()))

    async def protection(payload: dict[str, Any], ctx: HookContext) -> HookOutput | None:
        cwd = str(payload.get("cwd") or ctx.project_dir)
        tool_input = payload.get("tool_input") or {}
        path = tool_input.get("file_path") if isinstance(tool_input, dict) else None
        if isinstance(path, str) and any(_under(_normalise(path, cwd), _normalise(a, cwd)) for a in allow_paths):
            return None
        verdict = evaluate(payload, cwd)
        if verdict.deny:
            return deny(verdict.deny)
        if verdict.advice:
            return context("PreToolUse", verdict.advice)
        return None

    return protection
