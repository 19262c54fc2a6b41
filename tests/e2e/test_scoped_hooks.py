"""Hooks of a project's subagents and skills (hooks/scoped.py), through the real CLI: they fire exactly while that
subagent or skill runs, and, being the project's files, only once the project is trusted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = [pytest.mark.asyncio, pytest.mark.cli]


def write_agent(project: Path, log: Path) -> None:
    agents = project / ".claude" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "prober.md").write_text(f"""---
name: prober
description: Runs the probe when asked.
tools: Bash
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: "cat >> '{log}'; echo >> '{log}'"
          name: prober-gate
  Stop:
    - hooks:
        - type: command
          command: "echo stopped >> '{log}.stop'"
          name: prober-stop
---
You run the probe.
""")


def write_skill(project: Path, log: Path) -> None:
    skill = project / ".claude" / "skills" / "deploy"
    skill.mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text(f"""---
name: deploy
description: Deploy the project.
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: "cat >> '{log}'; echo >> '{log}'"
          name: deploy-gate
---
Run the deploy steps.
""")


def calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []


async def test_a_subagents_hooks_fire_for_its_tool_calls_only(sidecar, tmp_path: Path) -> None:
    log = tmp_path / "notes" / "prober.jsonl"  # in the project: its hooks run in the session's hook box
    async with sidecar("notes", trust=False) as run:
        write_agent(run.project, log)
        await run.trust()
        listed = await run.request("hooks/list", {"projectDir": str(run.project)})
        gate = next(h for h in listed["hooks"] if h["name"] == "prober-gate")
        assert gate["scope"] == {"agent": "prober"} and gate["state"] == "active"
        assert next(h for h in listed["hooks"] if h["name"] == "prober-stop")["event"] == "SubagentStop"
        session = await run.new_session("subagent", builtinHooks=False, allowedTools=["Bash", "Agent"])
        result = await run.prompt(session["sessionId"], "go")
        assert result["stopReason"] == "end_turn"
    [call] = calls(log)  # the main agent's Bash did not fire it
    assert call["tool_input"]["command"] == "echo from-the-subagent"
    assert call["agent_type"] == "prober"
    assert Path(f"{log}.stop").read_text().strip() == "stopped", "the subagent's Stop is its SubagentStop"


async def test_a_subagents_hooks_wait_for_the_projects_trust(sidecar, tmp_path: Path) -> None:
    """The attack: a cloned project ships an agent whose front matter runs a command; untrusted, it never runs."""
    log = tmp_path / "notes" / "prober.jsonl"  # in the project: its hooks run in the session's hook box
    async with sidecar("notes", trust=False) as run:
        write_agent(run.project, log)
        listed = await run.request("hooks/list", {"projectDir": str(run.project)})
        assert next(h for h in listed["hooks"] if h["name"] == "prober-gate")["state"] == "untrusted"
        session = await run.new_session("subagent", builtinHooks=False, allowedTools=["Bash", "Agent"])
        await run.prompt(session["sessionId"], "go")
    assert calls(log) == [] and not Path(f"{log}.stop").exists()


async def test_a_skills_hooks_fire_from_its_invocation_to_the_end_of_the_turn(sidecar, tmp_path: Path) -> None:
    log = tmp_path / "notes" / "deploy.jsonl"  # in the project: its hooks run in the session's hook box
    async with sidecar("notes", trust=False) as run:
        write_skill(run.project, log)
        await run.trust()
        session = await run.new_session("skill", builtinHooks=False, allowedTools=["Bash", "Skill"])
        result = await run.prompt(session["sessionId"], "deploy it")
        assert result["stopReason"] == "end_turn"
        tool_calls = [u for u in run.updates(session["sessionId"], "tool_call")]
        assert [u["name"] for u in tool_calls] == ["Bash", "Skill", "Bash"]
    assert [c["tool_input"]["command"] for c in calls(log)] == ["echo after-the-skill"]
