"""The guards' cached and fast paths answer exactly as the slow ones: env-isolation follows environment changes, the shell parser's plain-command path matches its full one and shlex."""

from __future__ import annotations

import shlex
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hooks.builtin.protection import dangerous_command_reason
from hooks.builtin.shell_parse import _Parser, parse
from tests.builtin.harness import sandbox


@pytest.mark.asyncio
async def test_env_isolation_follows_variables_set_and_removed_between_calls(tmp_path, monkeypatch):
    async with sandbox(tmp_path) as sb:
        first = (await sb.tool("PreToolUse", "Bash", {"command": "ls"})).updated_input["command"]
        assert "ORION_LATE_SECRET" not in first
        monkeypatch.setenv("ORION_LATE_SECRET", "s3cret")
        second = (await sb.tool("PreToolUse", "Bash", {"command": 'echo "${ORION_LATE_SECRET-unset}"'})).updated_input["command"]
        monkeypatch.delenv("ORION_LATE_SECRET")
        third = (await sb.tool("PreToolUse", "Bash", {"command": "ls"})).updated_input["command"]
    assert "ORION_LATE_SECRET" in second.split("; ", 1)[0]
    assert "ORION_LATE_SECRET" not in third
    # run with the secret present, as the agent's shell would have it: the rewritten command does not see it
    out = subprocess.run(["/bin/sh", "-c", second], capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin", "ORION_LATE_SECRET": "s3cret"})
    assert out.stdout.strip() == "unset"


def _words(script) -> list[list[str]]:
    return [[w.text for w in c.words] for c in script.commands]


PLAIN = st.text(alphabet="abz09AZ_-./=,:@%+^~ \t", max_size=40)


@settings(max_examples=400, deadline=None)
@given(PLAIN)
def test_plain_commands_split_as_the_full_parser_and_shlex_split_them(command):
    fast = _words(parse(command))
    assert fast == _words(_Parser(command, 0).script(0, None)[0])
    assert fast == ([shlex.split(command)] if command.split() else [])


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab $(){}[]`'\"\\;|&<>#\n*?=-~!", max_size=60))
def test_the_parser_never_raises_on_any_text(command):
    script = parse(command)
    assert isinstance(script.problems, list)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["rm -rf /", "rm -rf ~", "sudo rm -rf /*", "rm -fr $HOME", "chmod -R 777 /", "shutdown now"]),
       st.lists(st.sampled_from(["-v", "./build", "x=1", "--", "a.txt"]), max_size=3))
def test_plain_dangerous_commands_are_still_denied(command, extra):
    assert dangerous_command_reason(" ".join([command, *extra]), "/p") is not None


SHELLISH = st.text(alphabet="ab.e/~ $(){}[]`'\"\\;|&<>#\n*?=-!:@x0123", max_size=80)
WORDS = st.lists(st.sampled_from(["rm", "-rf", "/", "~", ".env", "sh", "-c", "cd", "&&", "|", "curl", "-d", "@.env", "nc",
                                  "cp", "mv", "sed", "-i", ">", ">>", "<", "eval", "find", "-delete", "-exec", "{}", ";",
                                  "git", "config", "core.hooksPath", "python3", "'open(\"x\",\"w\")'", "$X", "$(", ")",
                                  "xargs", "sudo", "env", "tee", "<<EOF\n", "\nEOF\n"]), max_size=12)


@settings(max_examples=400, deadline=None)
@given(st.one_of(SHELLISH, WORDS.map(" ".join)))
def test_protection_never_raises_and_never_approves(command):
    from hooks.builtin.guard_paths import GuardPaths
    from hooks.builtin.protection import evaluate
    from hooks.builtin.shell_effects import analyse

    # analyse itself, not only evaluate (which turns a crash into "ask"): a crash here is a bug to fix.
    assert analyse(command, GuardPaths.for_call("/p", None, None), "/p").level in (None, "deny", "ask")
    verdict = evaluate({"tool_name": "Bash", "tool_input": {"command": command}, "cwd": "/p"}, "/p")
    assert not (verdict.deny and verdict.ask)
    assert not hasattr(verdict, "allow")
