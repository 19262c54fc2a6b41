"""Hooks that belong to a project's subagent or skill: the `hooks:` of `.claude/agents/*.md` and of
`.claude/skills/*/SKILL.md` front matter, as in Claude Code. They fire only while that subagent, or that skill, runs.

A subagent's hooks see the events from inside it (the CLI marks them with `agent_type`); its `Stop` is the subagent's
own stop, `SubagentStop`, as Claude Code converts it. A skill's hooks fire from the moment the agent invoked the
skill (the Skill tool's PostToolUse) to the end of that agent's turn.

They are the project's files: part of what the user trusts (the trust manifest pins `.claude/agents` and
`.claude/skills`), and they wait for that trust like `.claude/settings.json`'s hooks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hooks.config import ParsedSettings, parse_settings

AGENTS_DIR = Path(".claude") / "agents"
SKILLS_DIR = Path(".claude") / "skills"
MAX_FILES = 500
MAX_BYTES = 256 * 1024
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


@dataclass(slots=True)
class ScopedSettings:
    scope: str  # "agent" | "skill"
    name: str  # the agent type or the skill name the hooks belong to
    parsed: ParsedSettings


def front_matter(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The YAML between a leading `---` and the next `---` line: (mapping, None), (None, None) when there is none,
    or (None, problem)."""
    import yaml

    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return None, None
    try:
        end = next(i for i, line in enumerate(lines[1:], 1) if line.strip() == "---")
    except StopIteration:
        return None, "front matter opened with --- is never closed"
    try:
        data = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        return None, f"front matter is not valid YAML: {str(exc).splitlines()[0]}"
    if not isinstance(data, dict):
        return None, "front matter is not a mapping"
    return data, None


def _read(path: Path, scope: str, default_name: str, warnings: list[str]) -> ScopedSettings | None:
    try:
        if path.stat().st_size > MAX_BYTES:
            warnings.append(f"{path}: larger than {MAX_BYTES} bytes; its hooks are not read")
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        warnings.append(f"{path}: unreadable ({exc.strerror or exc}); its hooks are not read")
        return None
    data, problem = front_matter(text)
    if problem is not None:
        if "hooks:" in text:
            warnings.append(f"{path}: {problem}; its hooks are not read")
        return None
    if data is None or "hooks" not in data:
        return None
    name = data.get("name", default_name)
    if not isinstance(name, str) or not _NAME.match(name):
        warnings.append(f"{path}: $.name: {name!r} is not a usable {scope} name; its hooks are not read")
        return None
    hooks = data["hooks"]
    if scope == "agent" and isinstance(hooks, dict) and "Stop" in hooks:
        # A subagent's Stop is its SubagentStop (Claude Code converts it the same way).
        hooks = {("SubagentStop" if event == "Stop" else event): groups for event, groups in hooks.items()}
    parsed = parse_settings({"hooks": hooks}, path)
    return ScopedSettings(scope=scope, name=name, parsed=parsed)


def read_scoped(project_dir: Path, warnings: list[str]) -> list[ScopedSettings]:
    """Every project subagent and skill that declares hooks, in a stable order; problems go to `warnings`."""
    out: list[ScopedSettings] = []
    agents = project_dir / AGENTS_DIR
    if agents.is_dir():
        for path in sorted(agents.glob("*.md"))[:MAX_FILES]:
            found = _read(path, "agent", path.stem, warnings)
            if found is not None:
                out.append(found)
    skills = project_dir / SKILLS_DIR
    if skills.is_dir():
        for path in sorted(skills.glob("*/SKILL.md"))[:MAX_FILES]:
            found = _read(path, "skill", path.parent.name, warnings)
            if found is not None:
                out.append(found)
    return out


# --------------------------------------------------------------------------- which skill is running

def skill_key(agent_id: str | None) -> str:
    """The session.state key of the skill running in the main agent (None) or in one subagent."""
    return f"_active_skill:{agent_id or 'main'}"
