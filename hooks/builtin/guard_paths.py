"""What a path is to the guards: a secret, a system or git-internal file, Orion's own state, or the project's hook machinery."""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import os
import posixpath
from dataclasses import dataclass
from typing import Any

from hooks import paths as orion_paths

# `.env` templates hold placeholders and are meant to be committed.
ENV_TEMPLATE_SUFFIXES = (".example", ".sample", ".template", ".dist", ".defaults")
PRIVATE_KEY_NAMES = frozenset({"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk"})
# Always a key or certificate store, whatever is inside.
KEY_SUFFIXES = (".pem", ".p12", ".pfx", ".jks", ".keystore", ".ppk", ".gpg", ".p8")
# Also a Keynote deck (`.key`) or an AsciiDoc file (`.asc`): decided by content, else by context.
AMBIGUOUS_KEY_SUFFIXES = (".key", ".asc")
_KEY_MARKERS = (b"PRIVATE KEY-----", b"BEGIN PGP PRIVATE KEY BLOCK", b"BEGIN PGP MESSAGE", b"BEGIN OPENSSH PRIVATE KEY")
_KEY_DIR_HINTS = frozenset({".ssh", "ssl", "tls", "certs", "cert", "certificates", "keys", "private", "secrets", "pki"})
_KEY_STEM_HINTS = frozenset({"private", "privkey", "server", "client", "tls", "ssl", "signing", "key", "master"})
CREDENTIAL_NAMES = frozenset(
    {".netrc", ".pgpass", ".npmrc", ".pypirc", ".git-credentials", ".htpasswd", "credentials", "credentials.json",
     "secrets.json", "secrets.yaml", "secrets.yml", "service-account.json", ".dockercfg", ".envrc"}
)
CREDENTIAL_DIRS = (".ssh", ".gnupg", ".aws", ".kube", ".docker", ".azure", ".config/gcloud")
SYSTEM_DIRS = (
    "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/dev", "/proc", "/sys",
    "/root", "/var/lib", "/var/log", "/opt/homebrew", "/System", "/Library", "/private/etc", "/private/var/db",
)
HARMLESS_DEVICES = ("/dev/null", "/dev/tty", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/fd/", "/dev/shm/",
                    "/dev/zero", "/dev/random", "/dev/urandom")
# Files every new shell of the user runs: editing them changes what runs later.
SHELL_STARTUP = frozenset({".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zshenv", ".zprofile",
                           ".zlogin", ".kshrc", ".cshrc", ".tcshrc"})
# Names a glob is tried against: `rm .env*` or `find -name 'id_*' -delete` reach secrets by pattern.
_SAMPLE_SECRETS = (".env", ".env.local", ".env.production", "id_rsa", "id_ed25519", "credentials", ".npmrc",
                   ".netrc", ".git-credentials", "secrets.json", "server.pem")


def normalise(path: str, cwd: str, home: str) -> str:
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    if not posixpath.isabs(path):
        path = posixpath.join(cwd, path)
    path = posixpath.normpath(path)
    return "/" + path.lstrip("/") if path.startswith("//") else path  # `//` is `/` on every system we run on


def under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _is_key(full: str, content: str | None) -> bool:
    name = posixpath.basename(full)
    lower = name.lower()
    if name in PRIVATE_KEY_NAMES or lower.endswith(KEY_SUFFIXES):
        return True
    if not lower.endswith(AMBIGUOUS_KEY_SUFFIXES):
        return False
    if content is not None:
        return any(m.decode() in content for m in _KEY_MARKERS)
    try:
        if os.path.isdir(full):
            return False  # a Keynote package
        with open(full, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        head = None
    if head is not None:
        return any(m in head for m in _KEY_MARKERS)
    # Not there yet: judge by where it goes and what it is called.
    parent = posixpath.basename(posixpath.dirname(full)).lower()
    stem = lower.rsplit(".", 1)[0]
    return parent in _KEY_DIR_HINTS or stem in _KEY_STEM_HINTS or stem.endswith(("_key", "-key", ".priv", "_rsa"))


def secret_reason(full: str, home: str, content: str | None = None) -> str | None:
    """Why `full` (normalised) holds secrets, or None."""
    name = posixpath.basename(full)
    lower = name.lower()
    if lower == ".env" or (lower.startswith(".env.") and not lower.endswith(ENV_TEMPLATE_SUFFIXES)) or (
        lower.endswith(".env") and not lower.endswith(ENV_TEMPLATE_SUFFIXES)
    ):
        return f"{name} holds environment secrets"
    if lower in CREDENTIAL_NAMES or (lower.startswith("service-account") and lower.endswith(".json")):
        return f"{name} is a credentials file"
    if "/." in full:  # every credential directory is a dot-directory: most paths skip the loop
        for cred in CREDENTIAL_DIRS:
            if f"/{cred}/" in full or full.endswith(f"/{cred}"):
                return f"{cred}/ holds credentials"
    if _is_key(full, content):
        return f"{name} looks like a private key or certificate store"
    return None


def pattern_reason(pattern_full: str, home: str) -> str | None:
    """Why a glob might reach secrets (`rm .env*`), or None."""
    base = posixpath.basename(pattern_full)
    if not base.startswith(".") and not base.strip("*?."):
        return None  # `*`, `*.*`: every visible name; what the folder is decides (the tree and path rules)
    for sample in _SAMPLE_SECRETS:
        if sample.startswith(".") and not base.startswith("."):
            continue  # a shell glob matches a leading dot only when the pattern spells it
        if fnmatch.fnmatchcase(sample, base):
            return f"the pattern {base} matches secret files such as {sample}"
    return None


@dataclass(slots=True, frozen=True)
class GuardPaths:
    """The places one guard call protects, computed once per call from the session and the environment."""

    home: str
    project: str
    orion_dirs: tuple[tuple[str, str], ...]  # (directory, what it is)
    real_home: str = ""  # home and project with their links followed: what a resolved path is compared with
    real_project: str = ""

    @classmethod
    def for_call(cls, project_dir: Any, data_dir: Any, transcript_path: Any) -> GuardPaths:
        transcript = str(transcript_path or "")
        config = transcript.rsplit("/projects/", 1)[0] if "/projects/" in transcript else ""
        # Everything the answer depends on; computing it costs ~30 µs of pathlib, a cache hit ~2. CPython's raw
        # environ store skips decoding each value (anything else takes os.environ).
        raw = getattr(os.environ, "_data", None)
        if raw is not None and os.name == "posix":
            env_key = tuple(raw.get(n) for n in _ENV_INPUTS_RAW)
        else:
            env_key = tuple(os.environ.get(n) for n in _ENV_INPUTS)
        key = env_key + (str(project_dir or ""), str(data_dir or ""), config)
        return _for_call(key)

    def orion_reason(self, full: str) -> str | None:
        if not full.startswith(tuple(root for root, _ in self.orion_dirs)):
            return None  # one C-level test for the common path outside every one of them
        for root, what in self.orion_dirs:
            if under(full, root):
                if self.project and under(self.project, root) and under(full, self.project):
                    continue  # a project kept inside such a directory is still the project
                return f"{full} is part of {what}; the agent must not change Orion's own files"
        return None

    def machinery_reason(self, full: str) -> str | None:
        """Why a write to `full` changes what runs: the project's hook machinery, or a shell's startup file."""
        if self.project and under(full, self.project):
            rel = full[len(self.project):].lstrip("/")
            if rel in (".mcp.json", ".claude", ".claude/hooks", ".claude/hook-overrides.json") or rel.startswith(
                ".claude/hooks/"
            ) or (
                rel.startswith(".claude/settings") and rel.endswith(".json") and "/" not in rel[len(".claude/"):]
            ):
                return (f"{rel} is part of the project's hook machinery: editing it changes what runs "
                        "in this and later sessions")
        if posixpath.dirname(full) == self.home and posixpath.basename(full) in SHELL_STARTUP:
            return f"{posixpath.basename(full)} runs in every new shell: editing it changes what runs later"
        if full in (posixpath.join(self.home, ".gitconfig"), posixpath.join(self.home, ".config", "git", "config")):
            return "the user's git configuration can name programs git runs (hooksPath, pager, …): editing it changes what runs"
        return None

    def write_verdict(self, full: str, content: str | None = None) -> tuple[str, str] | None:
        """("deny"|"ask", why) for changing the file `full` (normalised), or None when the guard has nothing to say.

        The path is judged as written and as the file system resolves it (its links followed: `linked.txt` ->
        `.env`, `up/…` -> `~/.config/orion/`), the stricter verdict winning: a link cannot turn a denied place into
        an allowed one. The OS boundary is what enforces this (a link swapped in after the check meets it); the
        guard says why, and says it for links made before the call."""
        written = self._verdict(full, content)
        if written is not None and written[0] == "deny":
            return written
        resolved = _resolved(full)
        if resolved == full:
            return written
        real = self if (self.real_home in ("", self.home) and self.real_project in ("", self.project)) else \
            dataclasses.replace(self, home=self.real_home or self.home, project=self.real_project or self.project)
        through = real._verdict(resolved, content)
        if through is None or (written is not None and through[0] == written[0]):
            return written
        return through[0], f"{full} leads to {resolved}: {through[1]}"

    def read_reason(self, full: str) -> str | None:
        """Why what `full` holds must not leave (a secret, Orion's own state), as written or through its links."""
        why = secret_reason(full, self.home) or self.orion_reason(full)
        if why is None:
            resolved = _resolved(full)
            if resolved != full:
                found = secret_reason(resolved, self.real_home or self.home) or self.orion_reason(resolved)
                why = f"{full} leads to {resolved}: {found}" if found else None
        return why

    def _verdict(self, full: str, content: str | None) -> tuple[str, str] | None:
        if full.startswith(HARMLESS_DEVICES):
            return None
        why = self.orion_reason(full)
        if why:
            return "deny", why
        why = secret_reason(full, self.home, content)
        if why:
            return "deny", why
        parts = full.split("/")
        if ".git" in parts[:-1]:
            return "deny", "files inside .git are git's internal state (config, hooks, objects)"
        if full.startswith(SYSTEM_DIRS):
            for sysdir in SYSTEM_DIRS:
                if under(full, sysdir):
                    return "deny", f"{sysdir} is a system directory"
        why = self.machinery_reason(full)
        if why:
            return "ask", why
        return None


def _resolved(full: str) -> str:
    """`full` with every link in it followed (what exists of it; the rest as written)."""
    try:
        return os.path.realpath(full)
    except (OSError, ValueError):
        return full


@functools.lru_cache(maxsize=64)
def _for_call(key: tuple[str | None, ...]) -> GuardPaths:
    return _compute(str(key[-3]), str(key[-2]), str(key[-1]))


_ENV_INPUTS = ("HOME", "ORION_DATA_DIR", "ORION_USER_SETTINGS", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR")
_ENV_INPUTS_RAW = tuple(n.encode() for n in _ENV_INPUTS)


def _compute(project_dir: str, data_dir: str, config_dir: str) -> GuardPaths:
    home = os.path.expanduser("~")
    dirs: list[tuple[str, str]] = []

    def add(path: Any, what: str) -> None:
        if path:
            full = posixpath.normpath(os.path.expanduser(str(path)))
            for spelling in (full, _resolved(full)):  # a path resolved through links meets the real place too
                if spelling not in ("/", home) and all(d != spelling for d, _ in dirs):
                    dirs.append((spelling, what))

    add(orion_paths.data_dir(), "Orion's data directory (trust, memory, tracking)")
    add(data_dir, "Orion's data directory (trust, memory, tracking)")
    add(orion_paths.user_settings_path().parent, "Orion's user settings")
    add(os.environ.get("CLAUDE_CONFIG_DIR"), "the Claude configuration directory")
    add(posixpath.join(home, ".claude"), "the Claude configuration directory")
    add(posixpath.join(home, ".claude.json"), "the Claude configuration file")
    # <config dir>/projects/<project>/<session>.jsonl: the session's own Claude config dir.
    add(config_dir, "this session's Claude configuration directory")
    project = posixpath.normpath(str(project_dir)) if project_dir else ""
    return GuardPaths(home=home, project=project, orion_dirs=tuple(dirs),
                      real_home=_resolved(home), real_project=_resolved(project) if project else "")
