"""`if` on a hook entry: Claude Code's permission-rule condition ("Bash(git *)", "Edit(src/**)"), parsed once and tested against one tool call.

How Claude Code 2.1.330 reads it (observed on the bundled CLI, tests/conformance
case `command_if_conditions`):

* It is tested only on the events about one tool call (TOOL_CONDITION_EVENTS). On
  any other event a hook with a condition does not run at all.
* `Tool` (or `Tool()` / `Tool(*)`) holds for every call of that tool; the name is
  compared exactly, after the CLI's renames of old tool names (Task → Agent).
* `Tool(content)` holds when the tool's own matcher accepts the content: Bash
  splits the command line into its simple commands (`a && b | c`, redirections
  and leading `VAR=x` left out) and holds when one of them matches, `prefix:*`
  as a prefix, anything else as a glob where `*` is any text and a trailing
  ` *` may be empty; the file tools match their path gitignore-style relative to
  the working directory; Glob and Grep match their `pattern`. A tool without
  such a matcher never holds for a content.
* A Bash command line this module cannot take apart (substitutions, subshells,
  compound statements, here-documents) holds: the hook runs. That is the
  direction the CLI takes for a command its parser does not judge, and the safe
  one for a guard.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

# Events whose input is one tool call; elsewhere a hook with `if` never runs.
TOOL_CONDITION_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest",
                                   "PermissionDenied"})

# The CLI's renames of tool names, applied to the rule's tool and to the call's.
_RENAMED = {"Task": "Agent", "KillShell": "TaskStop", "KillBash": "TaskStop", "ListPeers": "ListAgents",
            "Brief": "SendUserMessage", "ListMcpResources": "ListMcpResourcesTool",
            "ReadMcpResource": "ReadMcpResourceTool", "ReadMcpResourceDir": "ReadMcpResourceDirTool",
            "ProposeGoal": "SetGoal"}

_PATH_FIELDS = {"Read": "file_path", "Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
                "NotebookEdit": "notebook_path", "NotebookRead": "notebook_path"}
_PATTERN_TOOLS = frozenset({"Glob", "Grep"})


class ConditionError(ValueError):
    """The text is not a permission rule (unbalanced parentheses)."""


@dataclass(slots=True, frozen=True)
class Condition:
    """One parsed `if`: the tool it names and, optionally, what the tool's matcher must accept."""

    text: str
    tool: str
    content: str | None = None

    def holds(self, event: str, payload: dict[str, Any], cwd: str | None = None) -> bool:
        """Whether a hook with this condition runs for this event's input."""
        if event not in TOOL_CONDITION_EVENTS:
            return False
        tool = payload.get("tool_name")
        if not isinstance(tool, str) or _RENAMED.get(tool, tool) != self.tool:
            return False
        if self.content is None:
            return True
        tool_input = payload.get("tool_input")
        if not isinstance(tool_input, dict):
            return False
        if self.tool == "Bash":
            command = tool_input.get("command")
            return isinstance(command, str) and bash_matches(self.content, command)
        if self.tool in _PATH_FIELDS:
            path = tool_input.get(_PATH_FIELDS[self.tool])
            where = cwd or (payload.get("cwd") if isinstance(payload.get("cwd"), str) else None) or os.getcwd()
            return isinstance(path, str) and path_matches(self.content, path, where)
        if self.tool in _PATTERN_TOOLS:
            pattern = tool_input.get("pattern")
            return isinstance(pattern, str) and glob_matches(self.content, pattern)
        return False


def parse_condition(text: str) -> Condition | None:
    """`Tool` or `Tool(content)` as the CLI reads a rule; None for an empty text (no condition). Raises ConditionError."""
    if not text:
        return None
    if "(" not in text and ")" not in text:
        return Condition(text, _RENAMED.get(text, text))
    open_at, close_at = _unescaped(text, "("), _unescaped(text, ")", last=True)
    if open_at == -1 and close_at == -1:
        return Condition(text, _RENAMED.get(text, text))
    name = text[:open_at]
    if open_at == -1 or close_at <= open_at or close_at != len(text) - 1 or re.search(r"[()]", name):
        raise ConditionError(f"{text!r} is not a permission rule: write Tool or Tool(pattern), e.g. \"Bash(git *)\"")
    if not name:
        return Condition(text, _RENAMED.get(text, text))
    raw = text[open_at + 1:close_at]
    tool = _RENAMED.get(name, name)
    if raw in ("", "*"):
        return Condition(text, tool)
    return Condition(text, tool, raw.replace("\\(", "(").replace("\\)", ")").replace("\\\\", "\\"))


def _unescaped(text: str, char: str, *, last: bool = False) -> int:
    indices = range(len(text) - 1, -1, -1) if last else range(len(text))
    for i in indices:
        if text[i] == char:
            slashes, j = 0, i - 1
            while j >= 0 and text[j] == "\\":
                slashes, j = slashes + 1, j - 1
            if slashes % 2 == 0:
                return i
    return -1


# --------------------------------------------------------------------------- globs


@functools.lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A rule glob as the CLI compiles it: `*` any text (newlines too), `/**/` any directories, `\\*` a star, and a
    single trailing ` *` that may also match nothing (`git *` holds for `git`)."""
    text = re.sub(r"[ \t]+", " ", pattern.strip())
    text = text.replace("\\*", "\0STAR\0").replace("\\\\", "\0BACKSLASH\0")
    text = re.sub(r"[.+?^${}()|\[\]\\'\"]", lambda m: "\\" + m.group(0), text)
    text = re.sub(r"/(?:\*\*/)+", "\0GLOBSTAR\0", text)
    stars = text.count("*")
    text = text.replace("*", ".*").replace("\0GLOBSTAR\0", "/(?:.*/)?")
    text = text.replace("\0STAR\0", "\\*").replace("\0BACKSLASH\0", "\\\\")
    if text.endswith(" .*") and stars == 1:
        text = text[:-3] + "( .*)?"
    return re.compile(f"^{text}$", re.S)


def glob_matches(pattern: str, value: str) -> bool:
    if "\0" in pattern:
        return False
    return _glob_regex(pattern).match(re.sub(r"[ \t]+", " ", value)) is not None


# --------------------------------------------------------------------------- Bash


def bash_matches(content: str, command: str) -> bool:
    """Whether one simple command of `command` matches the rule content; True when the line cannot be taken apart."""
    commands = simple_commands(command)
    if commands is None:
        return True
    prefix = content[:-2] if content.endswith(":*") and len(content) > 2 else None
    for words in commands:
        line = " ".join(words)
        if prefix is not None:
            if any(line == p or line.startswith(p + " ") for p in (prefix, f"xargs {prefix}")):
                return True
        elif glob_matches(content, line) or glob_matches(f"xargs {content}", line):
            return True
    return False


_OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "\n")
_REDIRECTION = re.compile(r"&>>|&>|>>|>\||>&\d*-?|<&\d*-?|<<<|<<-?|<>|>|<")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_COMPOUND = frozenset({"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
                       "select", "function", "{", "}", "!", "[[", "]]", "coproc", "time"})
_WORD, _OPERATOR, _REDIRECT = "word", "operator", "redirect"


def simple_commands(command: str) -> list[list[str]] | None:
    """The argv of each simple command in a shell command line, or None when it holds more than simple commands
    joined by `&&`, `||`, `;`, `|`, `&` and newlines (substitutions, subshells, compound statements, heredocs)."""
    tokens = _tokens(command)
    if tokens is None:
        return None
    commands: list[list[str]] = []
    words: list[str] = []
    wants_target = False
    for kind, text in tokens:
        if wants_target:
            if kind != _WORD:
                return None
            wants_target = False
            continue
        if kind == _OPERATOR:
            if words:
                commands.append(words)
            elif text not in ("\n", ";", "&"):
                return None  # `&& x` at the start, `| |`: nothing to judge
            words = []
        elif kind == _REDIRECT:
            op = text.lstrip("0123456789")
            if op in ("<<", "<<-"):
                return None  # a here-document: its body follows on later lines
            wants_target = not op[-1:].isdigit() and not op.endswith("-")
        elif not words and _ASSIGNMENT.match(text):
            continue  # `LANG=C git push`: the command is `git push`
        elif not words and text in _COMPOUND:
            return None
        else:
            words.append(text)
    if wants_target:
        return None
    if words:
        commands.append(words)
    return commands


def _tokens(command: str) -> list[tuple[str, str]] | None:
    """Words (quotes removed), operators and redirections of a command line; None for what is not modelled here."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(command)
    word: list[str] = []
    quoted = False

    def flush() -> None:
        nonlocal quoted
        if word or quoted:
            out.append((_WORD, "".join(word)))
        word.clear()
        quoted = False

    while i < n:
        c = command[i]
        if c in " \t":
            flush()
            i += 1
        elif c == "\\":
            if command.startswith("\\\n", i):
                i += 2
                continue
            word.append(command[i + 1:i + 2])
            quoted = True
            i += 2
        elif c == "'":
            end = command.find("'", i + 1)
            if end == -1:
                return None
            word.append(command[i + 1:end])
            quoted = True
            i = end + 1
        elif c == '"':
            j, chunk = i + 1, []
            while j < n and command[j] != '"':
                if command[j] == "\\" and j + 1 < n and command[j + 1] in '"\\$`\n':
                    chunk.append(command[j + 1])
                    j += 2
                    continue
                if command[j] == "`" or command.startswith("$(", j):
                    return None
                chunk.append(command[j])
                j += 1
            if j >= n:
                return None
            word.append("".join(chunk))
            quoted = True
            i = j + 1
        elif c in "`()" or command.startswith(("$(", "$'", "<(", ">("), i):
            return None
        elif c == "#" and not word and not quoted:
            end = command.find("\n", i)
            i = n if end == -1 else end
        elif c in "<>" or command.startswith("&>", i):
            fd = "".join(word) if word and not quoted and "".join(word).isdigit() else ""
            if fd:
                word.clear()
            else:
                flush()
            match = _REDIRECTION.match(command, i)
            assert match is not None
            out.append((_REDIRECT, fd + match.group(0)))
            i = match.end()
        elif c in ";|&\n":
            flush()
            op = next(o for o in _OPERATORS if command.startswith(o, i))
            out.append((_OPERATOR, op))
            i += len(op)
        else:
            word.append(c)
            i += 1
    flush()
    return out


# --------------------------------------------------------------------------- file paths


def path_matches(content: str, file_path: str, cwd: str) -> bool:
    """A file tool's rule content against its path: gitignore-style relative to its root (`//abs`, `~/home`, `/`
    the working directory, else relative), then, for a pattern with no wildcard or one starting with `*`, a glob of
    the path as given."""
    root, relative = _rule_root(content, cwd)
    absolute = os.path.normpath(file_path if os.path.isabs(file_path) else os.path.join(cwd, file_path))
    inside = os.path.relpath(absolute, root)
    if relative and inside != "." and not inside.startswith("..") and not os.path.isabs(inside):
        if _gitignore_matches(relative, inside):
            return True
    stripped = content.strip()
    plain = _unescaped(stripped, "*") == -1 and not stripped.endswith(":*")
    if stripped.startswith("*") or plain:
        return glob_matches(content, file_path)
    return False


def _rule_root(content: str, cwd: str) -> tuple[str, str]:
    if content.startswith("//"):
        return "/", content[1:]
    if content.startswith("~/"):
        return os.path.expanduser("~"), content[1:]
    if content.startswith("./"):
        return cwd, content[2:]
    return cwd, content


@functools.lru_cache(maxsize=256)
def _gitignore_regex(pattern: str) -> re.Pattern[str]:
    dir_only = pattern.endswith("/") and pattern.strip("/") != ""
    body = pattern.rstrip("/") if dir_only else pattern
    anchored = body.startswith("/") or "/" in body.rstrip("/")
    body = body.lstrip("/")
    out, i = [], 0
    while i < len(body):
        if body.startswith("**/", i) and (i == 0 or body[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
        elif body.startswith("**", i) and i + 2 == len(body) and (i == 0 or body[i - 1] == "/"):
            out.append(".*")
            i += 2
        elif body[i] == "*":
            out.append("[^/]*")
            i += 1
        elif body[i] == "?":
            out.append("[^/]")
            i += 1
        elif body[i] == "[" and (end := body.find("]", i + 2)) != -1:
            inner = body[i + 1:end]
            out.append("[" + ("^" + inner[1:] if inner[:1] in "!^" else inner).replace("\\", "\\\\") + "]")
            i = end + 1
        elif body[i] == "\\" and i + 1 < len(body):
            out.append(re.escape(body[i + 1]))
            i += 2
        else:
            out.append(re.escape(body[i]))
            i += 1
    start = "^" if anchored else "^(?:.*/)?"
    return re.compile(start + "".join(out) + ("/$" if dir_only else "/?$"))


def _gitignore_matches(pattern: str, relative: str) -> bool:
    """Whether `relative` (a path under the root) or one of its parent directories matches, as `ignore` tests it."""
    regex = _gitignore_regex(pattern)
    parts = PurePosixPath(relative.replace(os.sep, "/")).parts
    for depth in range(1, len(parts)):
        if regex.match("/".join(parts[:depth]) + "/"):
            return True
    return regex.match("/".join(parts)) is not None
