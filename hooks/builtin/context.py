"""Context hooks: project-autodetect, project-detect, keyword-context, subagent-context, subagent-log, compact-summary, notification-forward."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
import yaml

from hooks.builtin.common import BuiltinEnv, Options, clip, context
from hooks.redaction import redact
from hooks.types import HookContext, HookFunction, HookOutput

PROJECTS_DIR = "Projects"
META_FILE = "_meta.yaml"
PROJECT_CACHE_SECONDS = 30.0
MIN_SINGLE_WORD_NAME = 4
MIN_KEYWORD_HITS = 2
SUMMARY_CHARS = 4000

_WORDS = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    return _WORDS.findall(text.lower())


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    if not n:
        return False
    first = needle[0]
    return any(haystack[i] == first and haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


# ----------------------------------------------------------------------------- PARA projects


@dataclass(slots=True, frozen=True)
class VaultProject:
    name: str
    path: str
    name_words: tuple[str, ...]
    keywords: tuple[tuple[str, ...], ...]  # each keyword as its word sequence


def _load_meta(meta: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(meta.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def list_projects(vault: Path) -> list[VaultProject]:
    """Every `<vault>/Projects/<name>/` folder, with keywords (and aliases) from its optional `_meta.yaml`. Blocking."""
    root = vault / PROJECTS_DIR
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return []
    projects = []
    for entry in entries:
        if not entry.is_dir() or entry.name.startswith((".", "_")):
            continue
        meta = _load_meta(Path(entry.path) / META_FILE)
        raw_keywords = meta.get("keywords") or []
        if isinstance(raw_keywords, str):
            raw_keywords = [k.strip() for k in raw_keywords.split(",")]
        aliases = meta.get("aliases") or []
        keywords = tuple(
            tuple(words(str(k))) for k in [*raw_keywords, *(aliases if isinstance(aliases, list) else [])] if words(str(k))
        )
        display = str(meta.get("name") or entry.name)
        projects.append(VaultProject(display, entry.path, tuple(words(entry.name)), keywords))
    return projects


def score_project(prompt_words: list[str], project: VaultProject) -> tuple[int, str | None]:
    """(score, reason) of one project against a prompt; a reason means high confidence.

    High confidence: the project's folder name appears as whole words (a
    one-word name needs at least 4 letters), or at least two different keywords
    from its `_meta.yaml` appear as whole words.
    """
    name_hit = _contains(prompt_words, list(project.name_words)) and (
        len(project.name_words) > 1 or len(project.name_words[0]) >= MIN_SINGLE_WORD_NAME
    )
    hits = [" ".join(k) for k in project.keywords if _contains(prompt_words, list(k))]
    hits = list(dict.fromkeys(hits))
    score = (10 if name_hit else 0) + len(hits)
    if name_hit:
        return score, f"the message names the project '{project.name}'"
    if len(hits) >= MIN_KEYWORD_HITS:
        return score, f"the message matches {len(hits)} keywords of '{project.name}' ({', '.join(hits[:5])})"
    return score, None


def pick_project(prompt: str, projects: list[VaultProject]) -> tuple[VaultProject, str] | None:
    """The single high-confidence project for a prompt; None when no project, or two, qualify equally."""
    prompt_words = words(prompt)
    scored = [(s, r, p) for p in projects for s, r in [score_project(prompt_words, p)] if r]
    if not scored:
        return None
    scored.sort(key=lambda t: -t[0])
    if len(scored) > 1 and scored[0][0] == scored[1][0]:
        return None  # ambiguous: better to say nothing than to pick the wrong project
    return scored[0][2], scored[0][1]


def _vault(ctx: HookContext, opts: Options) -> Path | None:
    vault = ctx.vault_dir or opts.get("vault_dir")
    return Path(vault) if vault else None


async def _set_project(ctx: HookContext, name: str, path: str, reason: str) -> None:
    ctx.state["active_project"] = {"name": name, "path": path}
    await ctx.emit("projectContextChange", {"project": {"name": name, "path": path}, "reason": reason})


def make_project_autodetect(opts: Options, env: BuiltinEnv) -> HookFunction:
    ttl = float(opts.get("cache_seconds", PROJECT_CACHE_SECONDS))
    cache: dict[str, tuple[float, list[VaultProject]]] = env.caches.setdefault("vault_projects", {})

    async def projects_of(vault: Path) -> list[VaultProject]:
        key = str(vault)
        now = time.monotonic()
        hit = cache.get(key)
        if hit is not None and now - hit[0] < ttl:
            return hit[1]
        found = await anyio.to_thread.run_sync(list_projects, vault)
        cache[key] = (now, found)
        return found

    async def project_autodetect(payload: dict[str, Any], ctx: HookContext) -> None:
        # Only a conversation's first message is classified, and never once a project is set.
        if ctx.state.get("project_autodetect_done") or ctx.state.get("active_project"):
            return None
        ctx.state["project_autodetect_done"] = True
        vault = _vault(ctx, opts)
        prompt = payload.get("prompt")
        if vault is None or not isinstance(prompt, str) or not prompt.strip():
            return None
        picked = pick_project(prompt, await projects_of(vault))
        if picked is None:
            return None
        project, reason = picked
        await _set_project(ctx, project.name, project.path, f"autodetect: {reason}")
        return None

    return project_autodetect


def make_project_detect(opts: Options, env: BuiltinEnv) -> HookFunction:
    async def project_detect(payload: dict[str, Any], ctx: HookContext) -> None:
        vault = _vault(ctx, opts)
        tool_input = payload.get("tool_input") or {}
        raw = tool_input.get("file_path") if isinstance(tool_input, dict) else None
        if vault is None or not isinstance(raw, str):
            return None
        response = payload.get("tool_response")
        if isinstance(response, dict) and response.get("type") == "update":
            return None  # an existing project's metadata was rewritten: nothing new
        path = Path(os.path.expanduser(raw))
        if not path.is_absolute():
            path = Path(payload.get("cwd") or ctx.project_dir) / path
        try:
            rel = Path(os.path.normpath(path)).relative_to(Path(os.path.normpath(vault)))
        except ValueError:
            return None
        if len(rel.parts) != 3 or rel.parts[0] != PROJECTS_DIR or rel.parts[2] != META_FILE:
            return None
        name = rel.parts[1]
        await _set_project(ctx, name, str(path.parent), f"project created: {name}")
        env.caches.get("vault_projects", {}).pop(str(vault), None)
        return None

    return project_detect


# ----------------------------------------------------------------------------- keyword-context

WORKFLOW_HINTS: dict[str, str] = {
    "tdd": "Work test-first: write a failing test that shows the wanted behaviour, make it pass with the "
    "smallest change, then refactor with the tests green.",
    "plan": "Plan before changing anything: write a short numbered plan (goal, steps, risks, how to verify) "
    "and confirm it with the user when the scope is unclear.",
    "analyze": "Analyse before acting: gather the relevant facts (code, data, docs), state findings with their "
    "evidence, and keep facts apart from assumptions.",
    "deepsearch": "Search in depth: try several queries and sources, read primary material, cross-check "
    "claims, and say where each finding came from.",
}
KEYWORD_ALIASES = {"analyse": "analyze", "analysis": "analyze", "planning": "plan"}


def make_keyword_context(opts: Options, env: BuiltinEnv) -> HookFunction:
    hints = {**WORKFLOW_HINTS, **dict(opts.get("hints", {}))}
    aliases = {**KEYWORD_ALIASES, **dict(opts.get("aliases", {}))}

    async def keyword_context(payload: dict[str, Any], ctx: HookContext) -> HookOutput | None:
        prompt = payload.get("prompt")
        if not isinstance(prompt, str):
            return None
        found: list[str] = []
        for word in words(prompt):
            key = aliases.get(word, word)
            if key in hints and key not in found:
                found.append(key)
        if not found:
            return None
        body = "\n".join(f"{key}: {hints[key]}" for key in found)
        return context("UserPromptSubmit", f"<workflow-hint>\n{body}\n</workflow-hint>")

    return keyword_context


# ----------------------------------------------------------------------------- subagents


def make_subagent_context(opts: Options, env: BuiltinEnv) -> HookFunction:
    async def subagent_context(payload: dict[str, Any], ctx: HookContext) -> HookOutput | None:
        project = ctx.state.get("active_project")
        if not isinstance(project, dict) or not project.get("path"):
            return None
        # The folder's basename, whatever the platform's separator, names the project.
        name = re.split(r"[\\/]", str(project["path"]).rstrip("\\/"))[-1] or project.get("name")
        return context(
            "SubagentStart",
            f"<project-context>Active PARA project: {name} ({project['path']})</project-context>",
        )

    return subagent_context


def make_subagent_log(opts: Options, env: BuiltinEnv) -> HookFunction:
    async def subagent_log(payload: dict[str, Any], ctx: HookContext) -> None:
        # SubagentStop has no hookSpecificOutput in Claude Code: logging is all this hook can do.
        ctx.log.info(
            "subagent stopped: agent_id=%s agent_type=%s",
            payload.get("agent_id"),
            payload.get("agent_type"),
        )
        return None

    return subagent_log


# ----------------------------------------------------------------------------- forwarding to the frontend


def make_compact_summary(opts: Options, env: BuiltinEnv) -> HookFunction:
    limit = int(opts.get("max_chars", SUMMARY_CHARS))

    async def compact_summary(payload: dict[str, Any], ctx: HookContext) -> None:
        summary = payload.get("compact_summary")
        if not isinstance(summary, str) or not summary:
            return None
        trigger = payload.get("trigger") or ctx.state.get("compact_trigger") or "auto"
        await ctx.emit("contextSummaryUpdated", {"summary": redact(summary)[:limit], "trigger": trigger})
        return None

    return compact_summary


def make_notification_forward(opts: Options, env: BuiltinEnv) -> HookFunction:
    async def notification_forward(payload: dict[str, Any], ctx: HookContext) -> None:
        await ctx.emit(
            "notification",
            {
                "title": redact(str(payload.get("title") or "")),
                "message": redact(clip(str(payload.get("message") or ""), 4000)),
                "notificationType": payload.get("notification_type"),
            },
        )
        return None

    return notification_forward
