"""`if` conditions read as Claude Code 2.1.330 reads a permission rule (hooks/conditions.py), case by case."""

from __future__ import annotations

import pytest

from hooks.conditions import ConditionError, bash_matches, parse_condition, path_matches, simple_commands


def pre(tool: str, **tool_input: str) -> dict:
    return {"tool_name": tool, "tool_input": tool_input, "cwd": "/p"}


@pytest.mark.parametrize(("rule", "command", "holds"), [
    ("git *", "git push --force", True),
    ("git *", "git", True),  # a single trailing ` *` may be empty
    ("git *", "gitk", False),
    ("git push *", "echo a && git push origin main", True),  # any simple command of the line
    ("git push *", "git status; ls | grep x", False),
    ("git push:*", "git push", True),
    ("git push:*", "git pushx", False),
    ("*--version", "echo start && git --version > out.txt", True),  # redirections are not part of the command
    ("git push *", "LANG=C git push -f 2>&1 | tee log", True),  # nor leading assignments
    ("rm -rf *", "xargs rm -rf /tmp/x", True),  # `xargs <rule>` too
    ("git  push *", "git   push\torigin", True),  # runs of blanks compare as one
    ("git commit -m *", "git commit -m 'two words'", True),  # quotes removed, as the shell passes the word
    ("npm *", "echo $(npm install)", True),  # a substitution is not taken apart: the hook runs
    ("npm *", "if true; then ls; fi", True),  # nor a compound statement
    ("npm *", "", False),
    (r"echo \*", "echo *", True),  # an escaped star is a star
    (r"echo \*", "echo x", False),
])
def test_bash_rules(rule: str, command: str, holds: bool) -> None:
    assert bash_matches(rule, command) is holds


def test_simple_commands_of_a_line() -> None:
    assert simple_commands("cd sub && FOO=1 git push -f >log 2>&1 || echo 'a b' | cat; ls &") == [
        ["cd", "sub"], ["git", "push", "-f"], ["echo", "a b"], ["cat"], ["ls"]]
    assert simple_commands("cat <<EOF\nx\nEOF") is None
    assert simple_commands("(cd x && rm y)") is None


@pytest.mark.parametrize(("text", "tool", "content"), [
    ("Bash", "Bash", None),
    ("Bash()", "Bash", None),
    ("Bash(*)", "Bash", None),
    ("Bash(git *)", "Bash", "git *"),
    (r"Bash(echo \(x\))", "Bash", "echo (x)"),
    ("Task", "Agent", None),  # the CLI's rename of an old tool name
    ("mcp__github__create_issue", "mcp__github__create_issue", None),
])
def test_parse(text: str, tool: str, content: str | None) -> None:
    cond = parse_condition(text)
    assert cond is not None and (cond.tool, cond.content) == (tool, content)


def test_a_malformed_rule_is_an_error_and_empty_is_no_condition() -> None:
    with pytest.raises(ConditionError):
        parse_condition("Bash(git *")
    assert parse_condition("") is None


@pytest.mark.parametrize(("event", "payload", "holds"), [
    ("PreToolUse", pre("Bash", command="git push"), True),
    ("PostToolUse", pre("Bash", command="git push"), True),
    ("PermissionRequest", pre("Bash", command="git push"), True),
    ("PreToolUse", pre("Write", file_path="/p/x"), False),  # another tool
    ("UserPromptSubmit", {"prompt": "git push"}, False),  # not a tool event: never
    ("Stop", {}, False),
])
def test_events(event: str, payload: dict, holds: bool) -> None:
    cond = parse_condition("Bash(git *)")
    assert cond is not None and cond.holds(event, payload) is holds


@pytest.mark.parametrize(("rule", "path", "holds"), [
    ("src/**", "/p/src/a/b.ts", True),
    ("src/*.ts", "/p/src/b.ts", True),
    ("src/*.ts", "/p/src/x/b.ts", False),  # `*` stays inside one directory
    ("*.ts", "/p/src/x/b.ts", True),  # a name without `/` matches at any depth
    ("*.ts", "/elsewhere/b.ts", True),  # and, starting with `*`, the path as given
    (".env", "/p/sub/.env", True),
    ("//etc/**", "/etc/passwd", True),  # `//` is the file system's root
    ("/p/a.txt", "/p/a.txt", True),  # no wildcard: the path itself
    ("docs/", "/p/docs/x.md", True),  # a directory and everything in it
    ("docs/", "/p/docs", False),
])
def test_file_paths(rule: str, path: str, holds: bool) -> None:
    assert path_matches(rule, path, "/p") is holds
    cond = parse_condition(f"Edit({rule})")
    assert cond is not None and cond.holds("PreToolUse", pre("Edit", file_path=path)) is holds
