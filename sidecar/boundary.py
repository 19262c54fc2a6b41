"""The one OS boundary around a session's CLI and everything it starts: what may be written, what may not be read, which processes are visible and which network is reachable; as bubblewrap arguments (Linux) or a Seatbelt profile (macOS).

The boundary is set up once, when the CLI starts, and holds for the CLI's whole process tree: its Bash, its own
file tools (Read/Write/Edit run inside the CLI process), the MCP servers it starts, whatever those run. Nothing in
it reads a command's text: a path, a symlink (`up -> ../..`), a spelling or a program the guards did not foresee
meets the kernel's mount table. docs/SECURITY.md "Sandbox" is the reader's version of this module.

Layout inside the box (Linux; the same rules in Seatbelt terms on macOS):

- `/` read-only; the project, the CLI's own config dir (its transcripts) and the user's extra writable paths
  writable; a private `/tmp`; a fresh `/dev`; `/run` and `$XDG_RUNTIME_DIR` empty (agent and bus sockets: a
  socket stays connectable on a read-only mount, so it must be out of sight, not just read-only).
- Orion's data and settings directories (trust store, memory, session index, other sessions' CLI homes), the
  user's Claude Code home when it is not this session's, and every credential store in CREDENTIAL_STORES: an
  empty directory nobody may list (tmpfs, mode 0111) or an empty read-only file.
- Inside the writable places, what runs later outside any boundary is read-only: the project's hook machinery,
  git's hooks and config, the user's Claude Code settings and plugins, editor task files, secrets files.
- A new PID namespace (`/proc` shows only the box), IPC and network namespaces (only loopback; see box_net.py
  for the two ways out: the model endpoint and Orion's egress proxy), no capabilities, `--die-with-parent`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# (path under the user's home, what a turned agent would take from it); docs/SECURITY.md shows this table.
CREDENTIAL_STORES: tuple[tuple[str, str], ...] = (
    (".ssh", "SSH keys, agent config, known hosts"),
    (".gnupg", "GPG private keys and agent socket"),
    (".aws", "AWS credentials and SSO tokens"),
    (".azure", "Azure CLI tokens"),
    (".config/gcloud", "Google Cloud credentials"),
    (".config/gh", "GitHub CLI token"),
    (".config/hub", "hub's GitHub token"),
    (".config/glab-cli", "GitLab CLI token"),
    (".netrc", "machine passwords (curl, git, ftp)"),
    (".git-credentials", "git's stored credentials"),
    (".config/git/credentials", "git's stored credentials (XDG)"),
    (".docker", "registry auths (config.json), contexts, Docker Desktop's socket"),
    (".kube", "Kubernetes credentials"),
    (".npmrc", "npm registry tokens"),
    (".yarnrc.yml", "Yarn registry tokens"),
    (".pypirc", "PyPI tokens"),
    (".gem/credentials", "RubyGems API key"),
    (".cargo/credentials", "crates.io token"),
    (".cargo/credentials.toml", "crates.io token"),
    (".terraform.d/credentials.tfrc.json", "Terraform Cloud tokens"),
    (".vault-token", "HashiCorp Vault token"),
    (".config/op", "1Password CLI"),
    (".password-store", "pass"),
    (".config/rclone", "rclone remotes and their secrets"),
    (".s3cfg", "s3cmd keys"),
    (".config/doctl", "DigitalOcean token"),
    (".oci", "Oracle Cloud keys"),
    (".local/share/keyrings", "GNOME keyring"),
    (".local/share/kwalletd", "KWallet"),
    (".pki", "NSS certificate and key databases"),
    (".mozilla", "Firefox profiles: cookies, saved passwords"),
    (".config/google-chrome", "Chrome profiles: cookies, saved passwords"),
    (".config/chromium", "Chromium profiles"),
    (".config/BraveSoftware", "Brave profiles"),
    (".config/microsoft-edge", "Edge profiles"),
    (".bash_history", "shell history (typed secrets)"),
    (".zsh_history", "shell history"),
    (".local/share/fish/fish_history", "shell history"),
    (".python_history", "REPL history"),
    (".node_repl_history", "REPL history"),
    (".psql_history", "database client history"),
    (".mysql_history", "database client history"),
    ("Library/Keychains", "macOS keychains"),
    ("Library/Cookies", "macOS cookies"),
    ("Library/Application Support/Google/Chrome", "Chrome profiles (macOS)"),
    ("Library/Application Support/Firefox", "Firefox profiles (macOS)"),
    ("Library/Safari", "Safari data"),
    ("Library/Messages", "Messages"),
    ("Library/Mail", "Mail"),
)
# Runtime places whose sockets reach agents and buses (ssh-agent, gpg-agent, the Secret Service, D-Bus, Docker).
RUNTIME_HIDDEN = ("/run", "/var/run")
# Inside the project: what runs later, outside any boundary, when written now.
PROJECT_READ_ONLY = (".claude", ".mcp.json", ".git/hooks", ".git/config", ".envrc", ".vscode", ".idea")
# Inside the user's own Claude Code home (a real-model session's config dir): what the user's next CLI runs.
CLAUDE_HOME_READ_ONLY = ("settings.json", "settings.local.json", "CLAUDE.md", "agents", "commands", "skills",
                         "hooks", "plugins", "output-styles", "keybindings.json")
_ENV_FILE = re.compile(r"^\.env(\..+)?$")
_ENV_TEMPLATE = re.compile(r"\.(example|sample|template|dist|defaults)$")
# /proc entries a process without capabilities but with uid 0 could still write (sysctls: core_pattern is a
# host-wide root command line); bwrap covers them only for unprivileged callers.
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus")
# The model's own hosts a real-model CLI needs (the API, and the login's token refresh).
MODEL_HOSTS = ("api.anthropic.com", "platform.claude.com")
PROVIDER_HOSTS = {"CLAUDE_CODE_USE_BEDROCK": "*.amazonaws.com", "CLAUDE_CODE_USE_VERTEX": "*.googleapis.com",
                  "CLAUDE_CODE_USE_FOUNDRY": "*.azure.com"}
SETTINGS_KEY = "sandbox"
PROXY_PORT = 3128  # inside the box; its own loopback, so any port is free
_LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


class BoundaryError(ValueError):
    """The boundary cannot be built as asked (a bad setting, a path it cannot place); the message says which."""


@dataclass(slots=True, frozen=True)
class BoxSettings:
    """The user's own choices (Orion's user settings, `sandbox`): never a project's."""

    allowed_hosts: tuple[str, ...] = ()
    writable_paths: tuple[str, ...] = ()
    hidden_paths: tuple[str, ...] = ()


@dataclass(slots=True, frozen=True)
class BoxPlan:
    """What one session's boundary is made of; every path absolute and resolved (a symlink's target is what a
    mount covers)."""

    project: str
    writable: tuple[str, ...]
    read_only: tuple[str, ...]
    hidden_dirs: tuple[str, ...]
    hidden_files: tuple[str, ...]
    create_dirs: tuple[str, ...] = ()  # writable dirs to create before the start (a mount point must exist)
    # Read-only places that must exist to be bound: a repository's `.git/hooks` the project lacks (git runs what
    # appears there for the user later, outside any box). Made empty (0755) before the start, as git init would.
    read_only_dirs_to_make: tuple[str, ...] = ()
    # The model endpoint when it is on loopback (host, port): the CLI inside reaches it over a unix socket
    # (ANTHROPIC_UNIX_SOCKET), which the sidecar splices to it. Elsewhere the model goes through the egress proxy.
    model_endpoint: tuple[str, int] | None = None
    # The sidecar speaks TLS to the model endpoint (an https model whose credential the sidecar holds: the CLI
    # inside talks plain HTTP over the socket, so the relay can put the credential in; sidecar/model_credential.py).
    model_tls: bool = False
    allowed_hosts: tuple[str, ...] = ()  # what Orion's egress proxy lets through (host, *.suffix, host:port)
    proxy_port: int = PROXY_PORT
    hidden_why: dict[str, str] = field(default_factory=dict, compare=False)

    def denied_write_paths(self) -> tuple[str, ...]:
        """What session/new reports as never writable: the read-only places inside writable ones and every
        hidden one (everything else outside `writable` is read-only anyway)."""
        return tuple(dict.fromkeys([*self.hidden_dirs, *self.hidden_files, *self.read_only]))

    def bwrap_args(self, empty_file: str, net_dir: str, model_socket: str | None,
                   shield: tuple[str, str] | None = None, *, tmp_dir: str | None = None) -> list[str]:
        """bubblewrap's options (no command): mounts in an order where a path's parent is always placed first.
        `net_dir` holds the sidecar's sockets (bound into the box read-only: a socket stays connectable);
        `shield` is the CLI's shield library (sidecar/cli_shield.py), (outside, inside), bound read-only.
        The session's hook box (sidecar/hook_box.py) has `tmp_dir`, a folder of the session's bound as its /tmp
        instead of an empty one."""
        # --as-pid-1: the box's first program (the CLI; the hook box's spawner) is the namespace's init, a direct child
        # of the outer bwrap, which reaps it (with bwrap's own init in between, that init outlives the outer bwrap and
        # is left for the host's pid 1 to reap).
        args = ["--die-with-parent", "--new-session", "--unshare-pid", "--as-pid-1", "--unshare-ipc", "--unshare-net",
                "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL",
                "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        for path in PROC_READ_ONLY:
            if os.path.exists(path):
                args += ["--ro-bind", path, path]
        args += ["--tmpfs", "/tmp"] if tmp_dir is None else ["--bind", tmp_dir, "/tmp"]
        # The programs the box runs may themselves live under /tmp (a checkout or virtual environment there: CI's
        # clones, a test run): the private /tmp must not hide the CLI, the interpreter or the sidecar's scripts.
        for path in _programs_under_tmp():
            args += ["--ro-bind", path, path]
        # Open, then close inside what is open, then hide, then open what sits inside a hidden place (a scripted
        # session's CLI home in Orion's data dir); parents before children within each step. Hiding after the
        # read-only binds matters: bwrap follows symlinks, so a project entry swapped for a link to ~/.ssh between
        # the plan and the start binds the real ~/.ssh read-only, and only a later tmpfs covers it again.
        inside_hidden = [p for p in self.writable if any(_under(p, h) and p != h for h in self.hidden_dirs)]
        steps: list[list[tuple[str, list[str]]]] = [
            [(p, ["--bind", p, p]) for p in self.writable if p not in inside_hidden],
            [(p, ["--ro-bind", p, p]) for p in self.read_only if not any(_under(p, w) for w in inside_hidden)],
            [(p, ["--perms", "0111", "--tmpfs", p]) for p in self.hidden_dirs]
            + [(p, ["--ro-bind", empty_file, p]) for p in self.hidden_files],
            [(p, ["--bind", p, p]) for p in inside_hidden],
            [(p, ["--ro-bind", p, p]) for p in self.read_only if any(_under(p, w) for w in inside_hidden)],
        ]
        for step in steps:
            for _path, op in sorted(step, key=lambda item: _depth(item[0])):
                args += op
        args += ["--ro-bind", net_dir, net_dir]
        if shield is not None:
            args += ["--ro-bind", shield[0], shield[1]]
        proxy = f"http://127.0.0.1:{self.proxy_port}"
        args += ["--setenv", "TMPDIR", "/tmp"]
        if model_socket is not None:
            args += ["--setenv", "ANTHROPIC_UNIX_SOCKET", model_socket]
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            args += ["--setenv", name, proxy]
        for name in ("NO_PROXY", "no_proxy"):
            args += ["--setenv", name, "localhost,127.0.0.1,::1"]
        for name in ("ALL_PROXY", "all_proxy", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS"):
            args += ["--unsetenv", name]
        args += ["--chdir", self.project]
        return args

    def seatbelt_profile(self, proxy_port: int) -> str:
        """The same boundary for macOS's sandbox-exec. Unverified here (no macOS): docs/SECURITY.md says what.

        Seatbelt applies the last rule that matches, so the order is: allow everything, forbid network but the
        model's and the proxy's loopback ports, forbid writes but the writable places, forbid writes to the
        read-only ones inside them, forbid reading and writing the hidden ones, then open the writable places
        that sit inside a hidden one (a scripted session's CLI home inside Orion's data dir) again.
        """
        def paths(items: Iterable[str], kind: str = "subpath") -> str:
            return " ".join(f"({kind} {_sb_string(p)})" for p in items)

        writable = [*self.writable, "/private/tmp", "/private/var/folders", "/dev"]
        ports = [*([self.model_endpoint[1]] if self.model_endpoint else []), proxy_port]
        lines = [
            "(version 1)",
            "(allow default)",
            ";; processes: only the box's own",
            "(deny process-info* (target others))",
            "(deny signal (target others))",
            "(deny mach-priv-task-port (target others))",
            ";; network: loopback to the model endpoint and Orion's egress proxy only",
            "(deny network-outbound)",
            "(deny network-bind (local ip))",
            "(allow network-bind (local ip \"localhost:*\"))",
            "(allow network-outbound (remote unix-socket (path-literal \"/private/var/run/syslog\")))",
            *(f"(allow network-outbound (remote ip \"localhost:{port}\"))" for port in ports),
            ";; writes: the project, the CLI's own config, temp dirs",
            "(deny file-write*)",
            f"(allow file-write* {paths(writable)})",
        ]
        if self.read_only:
            lines.append(f"(deny file-write* {paths(self.read_only)})")
        hidden = [*self.hidden_dirs, *self.hidden_files]
        if hidden:
            lines.append(";; not readable: Orion's state, other sessions, credential stores")
            lines.append(f"(deny file-read* file-write* {paths(hidden)})")
        inside_hidden = [p for p in self.writable if any(_under(p, h) for h in self.hidden_dirs)]
        if inside_hidden:
            lines.append(f"(allow file-read* file-write* {paths(inside_hidden)})")
        return "\n".join(lines) + "\n"


def _sb_string(path: str) -> str:
    return json.dumps(path)  # SBPL strings take the same escapes as JSON's for quote and backslash


def _depth(path: str) -> int:
    return len(Path(path).parts)


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _resolved(path: str | Path) -> str:
    return os.path.realpath(os.path.expanduser(str(path)))


def load_settings(path: Path) -> BoxSettings:
    """The `sandbox` section of the user's Orion settings (absent or unreadable: the defaults)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return BoxSettings()
    section = data.get(SETTINGS_KEY) if isinstance(data, dict) else None
    if not isinstance(section, dict):
        return BoxSettings()

    def strings(key: str) -> tuple[str, ...]:
        value = section.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise BoundaryError(f"{path}: $.{SETTINGS_KEY}.{key}: expected a list of strings")
        return tuple(value)

    network = section.get("network") or {}
    hosts = network.get("allowedHosts", []) if isinstance(network, dict) else None
    if not isinstance(hosts, list) or not all(isinstance(h, str) and _HOST_PATTERN.match(h) for h in hosts):
        raise BoundaryError(f"{path}: $.{SETTINGS_KEY}.network.allowedHosts: expected host names "
                            "(\"pypi.org\", \"*.npmjs.org\", \"example.com:8443\")")
    return BoxSettings(tuple(h.lower() for h in hosts), strings("writablePaths"), strings("hiddenPaths"))


_HOST_PATTERN = re.compile(r"^(\*\.)?[A-Za-z0-9.-]+(:[0-9]{1,5})?$")


def plan(
    project: Path,
    cli_env: Mapping[str, str],
    *,
    orion_dirs: Iterable[Path],
    home: Path | None = None,
    settings: BoxSettings | None = None,
    extra_writable: Iterable[Path] = (),
    roots: Iterable[Path] = (),
) -> BoxPlan:
    """The boundary of a session whose CLI runs in `project` with `cli_env`.

    `orion_dirs`: Orion's data directories and settings directory (never readable inside); `home`: the user's
    home, where the credential stores are (the sidecar's, not the CLI's: a scripted session's CLI has its own).
    `roots`: the client's other workspace folders (ACP `additionalDirectories`): writable like the project, with the
    same read-only places inside (hook machinery, git's hooks and config, secrets files); one that is or holds a
    place the box hides is refused.
    """
    settings = settings or BoxSettings()
    home_dir = _resolved(home or Path.home())
    project_dir = _resolved(project)
    cli_home = _resolved(cli_env.get("HOME") or home_dir)
    config_dir = _resolved(cli_env.get("CLAUDE_CONFIG_DIR") or os.path.join(cli_home, ".claude"))
    orion = [_resolved(p) for p in orion_dirs]
    session_owned = cli_home != home_dir and any(_under(cli_home, d) for d in orion)

    extra: list[str | Path] = [*extra_writable, *settings.writable_paths]
    workspace = [project_dir, *dict.fromkeys(_resolved(r) for r in roots)]
    writable = [*workspace, *(_resolved(p) for p in extra)]
    read_only = []
    make_read_only: list[str] = []
    for root in workspace:
        read_only += [os.path.join(root, name) for name in PROJECT_READ_ONLY]
        git_code = _git_code_paths(root)
        read_only += git_code + _secret_files(root)
        git_dir = os.path.join(root, ".git")
        if os.path.isdir(git_dir) and not os.path.islink(git_dir):
            # Where git looks for hooks but finds no folder (a repository made without one; a `core.hooksPath`
            # whose folder is not there yet): made empty first, else the agent could put hooks there.
            for hooks in [os.path.join(git_dir, "hooks"), *git_code]:
                parent = os.path.dirname(hooks)
                if (not os.path.lexists(hooks) and os.path.isdir(parent) and not os.path.islink(parent)
                        and _under(os.path.realpath(parent), root)):
                    make_read_only.append(_resolved(hooks))
    create: list[str] = []
    why: dict[str, str] = {}
    for path in orion:
        why.setdefault(path, "Orion's data or settings: trust store, memory, session index, other sessions' CLI homes")
    for relative, what in CREDENTIAL_STORES:
        why.setdefault(_resolved(os.path.join(home_dir, relative)), what)
    for path in settings.hidden_paths:
        why.setdefault(_resolved(path), "listed in the user's sandbox.hiddenPaths")
    runtime = cli_env.get("XDG_RUNTIME_DIR") or os.environ.get("XDG_RUNTIME_DIR")
    # Not on macOS: /var/run there holds what every program needs (mDNSResponder, syslog), and its agents' sockets
    # live elsewhere (launchd's per-user folders under /private/tmp and /private/var/folders).
    runtime_places = () if sys.platform == "darwin" else RUNTIME_HIDDEN
    for path in (*runtime_places, *([runtime] if runtime else [])):
        why.setdefault(_resolved(path), "agent and bus sockets (ssh-agent, gpg-agent, keyrings, D-Bus, Docker)")
    why.setdefault(_resolved(os.path.join(home_dir, ".claude")), "the user's Claude Code home: other sessions' "
                   "transcripts, the user's settings and hooks")
    why.setdefault(_resolved(os.path.join(home_dir, ".claude.json")), "the user's Claude Code state")
    for root in workspace[1:]:
        held = [p for p in why if _under(p, root) and _kind(p) is not None]
        if root in (home_dir, "/") or held:
            what = f"{held[0]} ({why[held[0]]})" if held else "the whole home or file system"
            raise BoundaryError(f"additional directory {root} cannot be a workspace folder: it holds {what}, which "
                                "the session's boundary keeps out of reach")

    if session_owned:
        # A CLI home of this session's own (scripted sessions, inside Orion's data dir): all of it is writable.
        writable.append(cli_home)
    else:
        # The user's own Claude Code home (a real-model session): the CLI writes its transcripts and state there;
        # other projects' transcripts stay out of sight, what the user's next CLI runs stays read-only.
        projects = os.path.join(config_dir, "projects")
        own_transcripts = os.path.join(projects, re.sub(r"[^A-Za-z0-9]", "-", str(project)))
        state = os.path.join(cli_home, ".claude.json")
        writable += [config_dir, own_transcripts]
        create += [config_dir, own_transcripts]
        if os.path.isfile(state):
            writable.append(state)
        why[projects] = "other projects' CLI transcripts"
        why[os.path.join(config_dir, "history.jsonl")] = "every project's typed prompts"
        read_only += [os.path.join(config_dir, name) for name in CLAUDE_HOME_READ_ONLY]
        read_only += _programs(config_dir)

    writable = [p for p in dict.fromkeys(writable) if p in create or _kind(p) is not None]
    hidden = {p: w for p, w in why.items() if p != "/" and p not in writable and _kind(p) is not None
              and not _covered(p, why, writable)}
    read_only = [p for p in dict.fromkeys(_resolved(p) for p in read_only)
                 if (_kind(p) is not None or p in make_read_only) and any(_under(p, w) for w in writable)
                 and p not in writable]
    endpoint, hosts = _network(cli_env, settings)
    return BoxPlan(
        project=project_dir, writable=tuple(writable), read_only=tuple(read_only),
        hidden_dirs=tuple(p for p in hidden if _kind(p) == "dir"),
        hidden_files=tuple(p for p in hidden if _kind(p) == "file"),
        create_dirs=tuple(create), read_only_dirs_to_make=tuple(p for p in make_read_only if p in read_only),
        model_endpoint=endpoint, allowed_hosts=hosts, hidden_why=hidden)


def _covered(path: str, hidden: Mapping[str, str], writable: Iterable[str]) -> bool:
    """Inside another hidden directory, with no writable place in between: already out of sight."""
    return any(other != path and _under(path, other) and _kind(other) == "dir"
               and not any(_under(w, other) and _under(path, w) for w in writable) for other in hidden)


def _kind(path: str) -> str | None:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    # Sockets, fifos and devices are hidden like files: an empty read-only file over them.
    return "dir" if stat.S_ISDIR(mode) else "file"


def _programs(folder: str) -> list[str]:
    """Scripts and programs at the top of a folder (a status line, a key helper): the user's next CLI runs them."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    found = []
    for entry in entries:
        try:
            if entry.is_file() and (entry.name.endswith((".sh", ".py", ".js", ".ts", ".mjs", ".cjs", ".rb", ".pl"))
                                    or entry.stat().st_mode & 0o111):
                found.append(entry.path)
        except OSError:
            continue
    return found


def _secret_files(project_dir: str) -> list[str]:
    """`.env`-style files at the project's top level (templates excepted): a write through a link to one stops."""
    try:
        names = os.listdir(project_dir)
    except OSError:
        return []
    return [os.path.join(project_dir, n) for n in names if _ENV_FILE.match(n) and not _ENV_TEMPLATE.search(n)]


_HOOKS_PATH = re.compile(r"^\s*hookspath\s*=\s*(.+?)\s*$", re.I | re.M)


def _git_code_paths(project_dir: str) -> list[str]:
    """What git runs for the user later: submodules' hooks and config, and a `core.hooksPath` inside the project
    (husky's `.husky/_`); the top-level `.git/hooks` and `.git/config` are in PROJECT_READ_ONLY."""
    found: list[str] = []
    modules = os.path.join(project_dir, ".git", "modules")
    for root, dirs, _files in os.walk(modules):
        if root.count(os.sep) - modules.count(os.sep) > 4:
            dirs[:] = []
            continue
        for name in ("hooks", "config"):
            if os.path.exists(os.path.join(root, name)) and os.path.exists(os.path.join(root, "HEAD")):
                found.append(os.path.join(root, name))
    try:
        with open(os.path.join(project_dir, ".git", "config"), encoding="utf-8", errors="replace") as fh:
            text = fh.read(256 * 1024)
    except OSError:
        return found
    for match in _HOOKS_PATH.finditer(text):
        value = match.group(1).strip('"')
        found.append(os.path.join(project_dir, os.path.expanduser(value)))
    return found


def _network(cli_env: Mapping[str, str], settings: BoxSettings) -> tuple[tuple[str, int] | None, tuple[str, ...]]:
    """(the model endpoint when it is on loopback, the hosts the egress proxy lets through)."""
    from sidecar.credentials import cli_truthy

    hosts = list(settings.allowed_hosts)
    base = cli_env.get("ANTHROPIC_BASE_URL")
    parts = urlsplit(base) if base else None
    host = ((parts.hostname if parts else None) or "").lower()
    port = (parts.port or (443 if parts.scheme == "https" else 80)) if parts is not None else 443
    endpoint = None
    if host in _LOOPBACK:
        endpoint = (host, port)
    else:
        hosts += MODEL_HOSTS
        if host:
            hosts.append(f"{host}:{port}")
    for switch, pattern in PROVIDER_HOSTS.items():
        if cli_truthy(cli_env.get(switch)):
            hosts.append(pattern)
    return endpoint, tuple(dict.fromkeys(hosts))


# --------------------------------------------------------------------------- a session's open box


@dataclass(slots=True, frozen=True)
class Boundary:
    """A decided boundary: the plan and the programs that build it (sidecar/sandbox.py found them)."""

    plan: BoxPlan
    platform: str  # "linux" (bubblewrap) or "macos" (Seatbelt)
    launcher: str  # the bwrap or sandbox-exec binary
    socat: str = ""  # Linux: the relay program box_init.sh runs inside
    shield: str = ""  # Linux: the CLI's shield library (sidecar/cli_shield.py), "" when there is none
    # The model credential the CLI inside holds only a placeholder of (sidecar/model_credential.py): the model
    # relay puts it into each request. Never in a repr.
    credential: Any = field(default=None, compare=False, repr=False)

    def open(self) -> Box:
        """Blocking (a few ms: a folder, two or three listening sockets): run it off the event loop."""
        return Box.open(self)


class Box:
    """One session's boundary, open: its private folder (bwrap's argument file or the Seatbelt profile, the empty
    file hidden files are covered with, the sockets of the ways out) and the relays behind those sockets.
    `close()` removes it all; the CLI must be gone by then."""

    def __init__(self, boundary: Boundary) -> None:
        self.boundary = boundary
        self.dir = _private_tmp_dir()
        self.relays: Any = None
        self.args_file = os.path.join(self.dir, "box.args" if boundary.platform == "linux" else "box.sb")
        # Where the shield is inside the box: beside the sockets, in this box's own folder (the box's /tmp is its own,
        # and nothing in it may write there: the path is a read-only mount).
        self.shield = os.path.join(self.dir, "cli-shield.so") if boundary.platform == "linux" and boundary.shield else ""

    @classmethod
    def open(cls, boundary: Boundary) -> Box:
        from sidecar import box_net, shell_isolation

        _sweep_once()
        box, plan = cls(boundary), boundary.plan
        try:
            _make_places(plan)
            if boundary.platform == "linux":
                empty = os.path.join(box.dir, "empty")
                os.close(os.open(empty, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400))
                net = os.path.join(box.dir, "net")
                os.mkdir(net, 0o700)
                box.relays = box_net.open_relays(plan, unix_dir=net, credential=boundary.credential)
                args = plan.bwrap_args(empty, net, box.relays.model_socket,
                                       (boundary.shield, box.shield) if box.shield else None)
                # Orion's shell prefix, where nothing inside can change it (sidecar/shell_isolation.py).
                args += shell_isolation.bwrap_args(plan.hidden_dirs)
                data = b"".join(arg.encode() + b"\0" for arg in args)
            else:
                box.relays = box_net.open_relays(plan, unix_dir=None)
                data = plan.seatbelt_profile(box.relays.proxy_tcp_port).encode()
            fd = os.open(box.args_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        except BaseException:
            box.close()
            raise
        return box

    @classmethod
    def open_for_hooks(cls, boundary: Boundary) -> Box:
        """The folder and the ways out of a session's hook boxes (sidecar/hook_box.py): the empty file hidden files
        are covered with, the egress proxy's relay; each hook brings its own arguments."""
        from sidecar import box_net

        _sweep_once()
        box = cls(boundary)
        try:
            _make_places(boundary.plan)
            empty = os.path.join(box.dir, "empty")
            os.close(os.open(empty, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400))
            net = os.path.join(box.dir, "net")
            os.mkdir(net, 0o700)
            box.relays = box_net.open_relays(boundary.plan, unix_dir=net)
        except BaseException:
            box.close()
            raise
        return box

    def launch_env(self) -> dict[str, str]:
        """What cli_exec.sh needs to start the CLI inside (none of it reaches the CLI's environment)."""
        kind = "bwrap" if self.boundary.platform == "linux" else "seatbelt"
        env = {"ORION_CLI_BOX": self.args_file, "ORION_CLI_BOX_EXEC": self.boundary.launcher,
               "ORION_CLI_BOX_KIND": kind, "ORION_CLI_BOX_INIT": str(BOX_INIT)}
        if kind == "bwrap":
            # box_init.sh's arguments, not the box's environment: every process inside could read that.
            env["ORION_CLI_BOX_SOCAT"] = self.boundary.socat
            env["ORION_CLI_BOX_RELAY"] = f"{self.boundary.plan.proxy_port}={self.relays.proxy_socket}"
            env["ORION_CLI_BOX_SHIELD"] = self.shield or "-"
        else:
            # No relays on macOS: the profile lets the box reach the proxy's loopback port itself.
            proxy = f"http://127.0.0.1:{self.relays.proxy_tcp_port}"
            env["ORION_CLI_BOX_PROXY"] = proxy
        return env

    def close(self) -> None:
        relays, self.relays = self.relays, None
        if relays is not None:
            relays.close()
        shutil.rmtree(self.dir, ignore_errors=True)


BOX_INIT = Path(__file__).resolve().parent / "box_init.sh"


BOX_PREFIX = "orion-box-"
_swept = threading.Event()


def _box_base() -> str:
    """Where the boxes' folders go: a short path (a unix socket's must fit in 108 bytes) without whitespace (the
    socket paths pass through a shell word list)."""
    base = tempfile.gettempdir()
    return "/tmp" if len(base) > 40 or any(c.isspace() for c in base) else base


def _make_places(plan: BoxPlan) -> None:
    """What must exist before a box of `plan` starts: the writable folders it creates (0700) and the read-only
    folders it makes empty (a repository's missing hooks folder)."""
    for path in plan.create_dirs:
        os.makedirs(path, mode=0o700, exist_ok=True)
    for path in plan.read_only_dirs_to_make:
        _make_inside(path)


def _make_inside(path: str) -> None:
    """An empty folder at `path` (0755), inside its parent as it is now: never through a link swapped in for the
    parent since the plan (the parent is opened without following one)."""
    parent, name = os.path.split(path)
    try:
        fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return  # gone or now a link: nothing made; bwrap then fails to bind it and the session says why
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o755, dir_fd=fd)
    finally:
        os.close(fd)


def _private_tmp_dir() -> str:
    """A 0700 folder for one box's files, named after this sidecar (`orion-box-<pid>-<start>-…`) so that a later
    sidecar can tell a dead one's leftovers (its box folders outlive a `kill -9`) from a live one's."""
    from sidecar.reaper import start_of

    start = re.sub(r"[^0-9]", "", start_of(os.getpid()) or "0")
    return tempfile.mkdtemp(prefix=f"{BOX_PREFIX}{os.getpid()}-{start}-", dir=_box_base())


def _sweep_once() -> None:
    """Remove box folders whose sidecar is gone (once per process): only ours (this user's, 0700, the name's pid
    and start time no longer a live process), never through a link."""
    if _swept.is_set():
        return
    _swept.set()
    from sidecar.reaper import start_of

    base = _box_base()
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        found = re.fullmatch(rf"{BOX_PREFIX}(\d+)-(\d+)-[A-Za-z0-9_]+", name)
        if found is None:
            continue
        path = os.path.join(base, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            continue
        pid, start = int(found.group(1)), found.group(2)
        if re.sub(r"[^0-9]", "", start_of(pid) or "") != start:
            shutil.rmtree(path, ignore_errors=True)


def _programs_under_tmp() -> list[str]:
    """The sidecar's own tree and the Python environment (where the bundled CLI sits) when they are under /tmp."""
    import sys

    # The interpreter's own folder too: in the self-contained build it is the executable, which starts helpers
    # inside the box (the hook box's spawner, a python hook's launcher).
    roots = {os.path.realpath(sys.prefix), os.path.realpath(os.path.dirname(os.path.dirname(__file__))),
             os.path.realpath(os.path.dirname(sys.executable))}
    return sorted(r for r in roots if r == "/tmp" or r.startswith("/tmp/")) if "/tmp" not in roots else []
