"""What a project would make Orion or the CLI execute, pinned by content: the trust manifest and the files each hook runs.

A manifest maps a label (a path relative to the project or vault, or an
absolute path for a file a hook names outside them) to a digest string. Its
hash is what the user trusts; the per-file digests say which file changed
since. Settings files are pinned by their canonical JSON minus a few keys that
cannot change what runs (so reformatting or switching `model` needs no
review); every other file by its bytes, through symlinks, with the resolved
target in the digest so repointing a link is a change too.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hooks.config import split_command

MANIFEST_VERSION = 2

# Settings files: pinned as parsed JSON, so whitespace and key order do not matter.
SETTINGS_FILES = (".claude/settings.json", ".claude/settings.local.json", ".claude/hook-overrides.json", ".mcp.json")
# Trees whose every file decides what runs: hook scripts, subagents, skills (which may carry scripts), commands.
PINNED_TREES = (".claude/hooks", ".claude/agents", ".claude/skills", ".claude/commands")
# Keys of a settings file that change neither what runs nor what is allowed.
INERT_SETTINGS_KEYS = frozenset({"$schema", "model", "cleanupPeriodDays", "includeCoAuthoredBy", "spinnerTipsEnabled"})
MAX_TREE_FILES = 2000
# A hook command names at most this many files of its own (interpreter script, config files...).
MAX_FILES_PER_HOOK = 16

ABSENT = "absent"


# --------------------------------------------------------------------------- digests


_digest_cache: dict[str, tuple[tuple[int, ...], str]] = {}
# Enough for a project's trees plus the enabled plugins' (one with its node_modules holds thousands of files).
_DIGEST_CACHE_MAX = 32768


def _identity(st: os.stat_result) -> tuple[int, ...]:
    # ctime cannot be set from user space: a rewrite that restores size and mtime still changes it.
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def file_digest(path: Path) -> str:
    """`sha256:<hex>` of a file's bytes, `link:<target>|sha256:<hex>` through a symlink, else a state word.

    Cached by the path and the identity (device, inode, size, mtime, ctime) of
    both the link and what it reaches, so checking a pinned hook script before
    each run costs one or two stat calls when nothing changed; another file
    swapped in anywhere along the path has another identity.
    """
    try:
        lst = os.lstat(path)
    except FileNotFoundError:
        return ABSENT
    except OSError as exc:
        return f"unreadable:{exc.strerror}"
    st = lst
    if stat.S_ISLNK(lst.st_mode):
        try:
            st = os.stat(path)
        except OSError:
            return f"link:{os.path.realpath(path)}|dangling"
    key = os.fspath(path)
    ident = _identity(lst) + _identity(st)
    cached = _digest_cache.get(key)
    if cached is not None and cached[0] == ident:
        return cached[1]
    prefix = f"link:{os.path.realpath(path)}|" if st is not lst else ""
    if stat.S_ISDIR(st.st_mode):
        return prefix + "directory"
    if not stat.S_ISREG(st.st_mode):
        return prefix + "special"
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 16), b""):
                h.update(block)
    except OSError as exc:
        return prefix + f"unreadable:{exc.strerror}"
    value = f"{prefix}sha256:{h.hexdigest()}"
    if len(_digest_cache) >= _DIGEST_CACHE_MAX:
        _digest_cache.clear()
    _digest_cache[key] = (ident, value)
    return value


def settings_digest(path: Path) -> str:
    """A settings file's canonical JSON (minus inert keys); bytes when it does not parse, so any edit still shows."""
    digest = file_digest(path)
    if not digest.startswith(("sha256:", "link:")) or digest.endswith(("dangling", "directory", "special")):
        return digest
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return digest
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k not in INERT_SETTINGS_KEYS}
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    link = digest.split("|", 1)[0] + "|" if digest.startswith("link:") else ""
    return f"{link}json:{hashlib.sha256(canonical.encode()).hexdigest()}"


# --------------------------------------------------------------------------- the files one hook runs


def expand_project_dir(text: str, project_dir: Path) -> str:
    for var in ("${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR"):
        text = text.replace(var, str(project_dir))
    return text


USER_CONFIG_PLACEHOLDER = re.compile(r"\$\{user_config\.([^}]*)\}")


def expand_exec_word(word: str, project_dir: Path, plugin_root: str | None = None, plugin_data: str | None = None,
                     user_config: Mapping[str, str] | None = None) -> str:
    """One word of an exec-form hook as Claude Code passes it: only the braced placeholders `${CLAUDE_PROJECT_DIR}`
    (and, for a plugin's hook, `${CLAUDE_PLUGIN_ROOT}` / `${CLAUDE_PLUGIN_DATA}` and `${user_config.KEY}`, the
    plugin's saved option) are replaced, as plain text; `$VAR`, `${HOME}`, `~`, quotes and globs reach the program
    untouched (no shell reads them). A `${user_config.KEY}` with no saved value stays as written (the caller does not
    run such a hook, as the CLI does not)."""
    if "${" not in word:
        return word
    word = word.replace("${CLAUDE_PROJECT_DIR}", str(project_dir))
    if plugin_root is not None:
        word = word.replace("${CLAUDE_PLUGIN_ROOT}", plugin_root)
    if plugin_data is not None:
        word = word.replace("${CLAUDE_PLUGIN_DATA}", plugin_data)
    if user_config is not None:
        word = USER_CONFIG_PLACEHOLDER.sub(lambda m: user_config.get(m.group(1), m.group(0)), word)
    return word


INTERPRETER = re.compile(r"(?:python[0-9.]*|node|bash|sh|zsh|dash|ksh|ruby|perl|deno|bun|php|tsx|ts-node)")
_SOURCE_WORDS = frozenset({"source", "."})
SCRIPT_SUFFIXES = (".py", ".sh", ".bash", ".zsh", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php", ".lua", ".ps1")


def command_files(command: str, cwd: Path, project_dir: Path) -> list[Path]:
    """The files a command line runs as code, present or not (a file that appears later is a change too).

    The program when given as a path (`./x`, `.claude/hooks/gate.sh`), the
    script an interpreter runs (`python3 -u gate.py`, `bash check`), what
    `source` reads, and any argument named like a script. A bare program name
    (`git`, `jq`) is found on PATH by the shell, not in the project; plain
    data arguments (`touch out.log`) are not code and are not pinned.
    """
    return list(_command_files(command, str(cwd), str(project_dir), os.environ.get("HOME", "")))


def argv_files(argv: tuple[str, ...] | list[str], cwd: Path) -> list[Path]:
    """The files an exec-form hook runs as code: `command_files` for an argv no shell reads (its placeholders already
    expanded; `~` and `$VAR` stay literal, as the program receives them)."""
    return list(_word_files(tuple(argv), str(cwd), None))


@functools.lru_cache(maxsize=512)
def _command_files(command: str, cwd: str, project_dir: str, home: str) -> tuple[Path, ...]:
    # Pure in its arguments (`~` reads HOME, hence the key): a hook fired after the agent's `cd` is checked
    # on every run, and the shell-word analysis was most of that check.
    return _word_files(tuple(split_command(expand_project_dir(command, Path(project_dir)))), cwd, home)


@functools.lru_cache(maxsize=512)
def _word_files(words: tuple[str, ...], cwd: str, home: str | None) -> tuple[Path, ...]:
    """`home` None: the words reach the program as they are (exec form), so `~` names a directory called `~`."""
    picked: list[str] = []
    if words and "/" in words[0]:
        picked.append(words[0])
    after_interpreter = bool(words) and bool(INTERPRETER.fullmatch(os.path.basename(words[0])))
    for index, word in enumerate(words[1:], start=1):
        if not word or len(word) > 4096:
            continue
        if word.startswith("-"):
            if word in ("-c", "-m", "-e", "--eval"):
                after_interpreter = False  # inline code or a module, not a file
            continue
        if after_interpreter or words[index - 1] in _SOURCE_WORDS or word.endswith(SCRIPT_SUFFIXES):
            picked.append(word)
        after_interpreter = False
    found: list[Path] = []
    for word in picked[:MAX_FILES_PER_HOOK]:
        path = Path(word).expanduser() if home is not None else Path(word)
        if not path.is_absolute():
            path = Path(cwd) / path
        path = Path(os.path.normpath(str(path)))
        if path not in found:
            found.append(path)
    return tuple(found)


# --------------------------------------------------------------------------- the manifest


@dataclass(slots=True, frozen=True)
class Manifest:
    """Label -> digest for everything one project (and its vault) would run; `hash` is what the user trusts."""

    files: dict[str, str]

    @property
    def hash(self) -> str:
        canonical = json.dumps({"v": MANIFEST_VERSION, "files": self.files}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def changes_since(self, trusted: dict[str, str]) -> list[dict[str, str]]:
        """Which labels were added, removed or modified since the trusted manifest (sorted by label)."""
        out = []
        for label in sorted(set(self.files) | set(trusted)):
            now, then = self.files.get(label, ABSENT), trusted.get(label, ABSENT)
            if now == then:
                continue
            change = "added" if then == ABSENT else "removed" if now == ABSENT else "modified"
            out.append({"path": label, "change": change})
        return out


def _label(path: Path, roots: Iterable[tuple[str, Path]]) -> str:
    for prefix, root in roots:
        try:
            rel = path.relative_to(root)
        except ValueError:
            continue
        return prefix + rel.as_posix()
    return str(path)


def _tree_files(root: Path) -> list[Path]:
    """Files under a pinned tree, not following directory symlinks (a linked directory is pinned as its target path)."""
    out: list[Path] = []
    if not root.is_dir() or root.is_symlink():
        return [root] if root.is_symlink() else out
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        base = Path(dirpath)
        for name in sorted(filenames) + [d for d in dirnames if (base / d).is_symlink()]:
            out.append(base / name)
            if len(out) >= MAX_TREE_FILES:
                return out
    return out


def build_manifest(project_dir: Path, vault_dir: Path | None, hook_files: Iterable[Path],
                   plugins: Iterable[Any] = ()) -> Manifest:
    """The manifest of a project as it is on disk now; `hook_files` are the files its hooks name (see `command_files`);
    `plugins` the Claude Code plugins the project enables (hooks.plugins.Plugin), each pinned by where it resolves
    and every file under its root (`plugin:<id>/<path>`), so an update to one is a change to the project."""
    project_dir = Path(project_dir)
    roots: list[tuple[str, Path]] = [("", project_dir)]
    files: dict[str, str] = {}
    for rel in SETTINGS_FILES:
        files[rel] = settings_digest(project_dir / rel)
    for rel in PINNED_TREES:
        for path in _tree_files(project_dir / rel):
            files[_label(path, roots)] = file_digest(path)
    if vault_dir is not None:
        vault_dir = Path(vault_dir)
        roots.insert(0, ("vault:", vault_dir))
        files["vault:.orion/settings.json"] = settings_digest(vault_dir / ".orion" / "settings.json")
    for plugin in plugins:
        where = f"{plugin.root}|version:{plugin.version}" if plugin.problem is None else f"unresolved:{plugin.problem}"
        files[f"plugin:{plugin.id}"] = "at:" + hashlib.sha256(where.encode()).hexdigest()
        for rel, digest in plugin.files.items():
            files[f"plugin:{plugin.id}/{rel}"] = digest
    for path in hook_files:
        files.setdefault(_label(path, roots), file_digest(path))
    return Manifest(files)


def pins(paths: Iterable[Path]) -> tuple[tuple[Path, str], ...]:
    """(path, digest now) for each file a hook runs: checked again right before every execution."""
    return tuple((p, file_digest(p)) for p in paths)


def changed_pin(pinned: tuple[tuple[Path, str], ...]) -> Path | None:
    """The first pinned file whose content is no longer what was trusted, or None."""
    for path, digest in pinned:
        if file_digest(path) != digest:
            return path
    return None
