"""Memory hooks on claude-mem's lifecycle: memory-context, memory-session, memory-observe, memory-summary, memory-complete,
and the opt-in memory-related (past work related to the first prompt)."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

import anyio.to_thread

from hooks.builtin.common import BuiltinEnv, Options, as_text, clip, context
from hooks.builtin.env_isolation import display_command
from hooks.builtin.transcript import last_messages
from hooks.memory.backfill import JOB as BACKFILL
from hooks.memory.identity import ProjectIdentity, project_identity
from hooks.memory.store import MemoryStore, memory_exists, open_store
from hooks.memory.tags import strip_tags, strip_tags_value
from hooks.redaction import redact, redact_value
from hooks.types import HookContext, HookFunction, HookOutput

# Low-value tools, as in claude-mem: meta tools whose use says nothing about the work.
SKIP_TOOLS = frozenset({"ListMcpResourcesTool", "SlashCommand", "Skill", "TodoWrite", "TodoRead", "AskUserQuestion",
                        "ExitPlanMode"})
RAW_STRING_CHARS = 20_000  # each string is cut here *before* tag stripping: an open <private> then runs to the end
PROMPT_CHARS = 4000
INPUT_CHARS = 1000
RESPONSE_CHARS = 2000
REQUEST_CHARS = 300
OUTCOME_CHARS = 600
CONTEXT_CHARS = 3000
RELATED_CHARS = 1500  # memory-related's share of memory-context's budget
# Keys shared by memory-context and memory-related: in the registry's caches (is memory-related on, and with what
# share) and in the session's state (what memory-context injected).
RELATED_RESERVE = "memory-related:reserve"
CONTEXT_USED = "memory-context:chars"
CONTEXT_SHOWN = "memory-context:shown"

_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


class Summarizer(Protocol):
    """A model that compresses one turn; configured as options["memory-summary"]["summarizer"]."""

    async def summarize(self, request: str, reply: str) -> str | None: ...


def clean_text(text: str, limit: int) -> str:
    """What memory may keep of a text: no private or injected sections, no secrets, bounded."""
    return clip(redact(strip_tags(text[:RAW_STRING_CHARS])).strip(), limit)


def clean_value(value: Any, limit: int) -> str:
    """A tool input or response as bounded text, stripped per string first so a tag never spans JSON quoting."""

    def cut(v: Any) -> Any:
        if isinstance(v, str):
            return v[:RAW_STRING_CHARS]
        if isinstance(v, dict):
            return {k: cut(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [cut(x) for x in v[:200]]
        return v

    # Redacted while still a structure: once JSON-encoded, a newline inside a string is `\n` glued to the next token.
    return clip(as_text(redact_value(strip_tags_value(cut(value)))).strip(), limit)


def extractive(text: str, limit: int) -> str:
    """The leading sentences of `text` that fit in `limit` characters."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    out = ""
    for sentence in _SENTENCE_END.split(flat):
        if len(out) + len(sentence) + 1 > limit:
            break
        out = f"{out} {sentence}".strip()
    return out or clip(flat, limit)


def _session_id(ctx: HookContext, payload: dict[str, Any]) -> str:
    # The sidecar's session id is the one every event (including the SessionStart/End
    # the sidecar fires itself) carries and the one the frontend searches by.
    return ctx.session_id or str(payload.get("session_id") or "unknown")


async def _project(env: BuiltinEnv, ctx: HookContext, payload: dict[str, Any]) -> ProjectIdentity:
    """The session's project identity (hooks/memory/identity.py): keyed by the real folder, not its name."""
    base = Path(ctx.project_dir or payload.get("cwd") or ".")
    return await anyio.to_thread.run_sync(project_identity, env.data(ctx), base)


async def _project_key(env: BuiltinEnv, ctx: HookContext, payload: dict[str, Any], store: MemoryStore) -> str:
    """What the store files this project's memory under: its id, or on a team database the shared name the user gave it."""
    identity = await _project(env, ctx, payload)
    return store.project_key(identity.id, identity.path)


def _store_opener(env: BuiltinEnv):
    async def store_for(ctx: HookContext) -> MemoryStore:
        return await anyio.to_thread.run_sync(open_store, env.data(ctx))

    return store_for


def make_memory_context(opts: Options, env: BuiltinEnv) -> HookFunction:
    n_summaries = int(opts.get("summaries", 3))
    n_observations = int(opts.get("observations", 8))
    max_chars = int(opts.get("max_chars", CONTEXT_CHARS))
    store_for = _store_opener(env)

    async def memory_context(payload: dict[str, Any], ctx: HookContext) -> HookOutput | None:
        if not await anyio.to_thread.run_sync(memory_exists, env.data(ctx)):
            return None
        BACKFILL.kick(env.data(ctx))  # memory stored before search by meaning existed gets its vectors, in the background
        store = await store_for(ctx)
        project = await _project(env, ctx, payload)
        key = store.project_key(project.id, project.path)
        items = await store.run(
            lambda: store.recent_context(
                key, exclude_session=_session_id(ctx, payload), summaries=n_summaries, observations=n_observations
            )
        )
        if not items.summaries and not items.observations:
            return None
        lines = [f"Earlier work in project '{project.name}', from Orion's memory (newest first):"]
        if items.summaries:
            lines.append("Session summaries:")
            for s in items.summaries:
                day = datetime.fromtimestamp(s["created_at"], tz=timezone.utc).strftime("%Y-%m-%d")
                lines.append(f"- {day}: {s['request']} -> {s['outcome']}")
        if items.observations:
            lines.append("Observations:")
            lines.extend(f"- [{o['tool_name']}] {clip(' '.join(o['text'].split()), 300)}" for o in items.observations)
        # With memory-related on, the recent items leave it its share of the one budget (it fills it at the first
        # prompt, with what is related to that prompt instead of what is merely recent).
        budget = max_chars - env.caches.get(RELATED_RESERVE, 0)
        body = ""
        for line in lines:
            if len(body) + len(line) + 1 > budget:
                break
            body += line + "\n"
        ctx.state[CONTEXT_USED] = len(body)
        ctx.state[CONTEXT_SHOWN] = {o["text"] for o in items.observations}
        return context("SessionStart", f"<memory-context>\n{body}</memory-context>")

    return memory_context


def make_memory_session(opts: Options, env: BuiltinEnv) -> HookFunction:
    store_for = _store_opener(env)

    async def memory_session(payload: dict[str, Any], ctx: HookContext) -> None:
        prompt = payload.get("prompt")
        if not isinstance(prompt, str):
            return None
        store = await store_for(ctx)
        sid = _session_id(ctx, payload)
        project = await _project_key(env, ctx, payload, store)
        number = await store.run(store.begin_prompt, sid, project)
        cleaned = clean_text(prompt, PROMPT_CHARS)
        ctx.state["memory_prompt_number"] = number
        ctx.state["memory_prompt_private"] = not cleaned
        if not cleaned:
            return None  # a fully private prompt leaves only the counter behind
        ctx.state["last_prompt"] = cleaned
        await store.run(store.add_prompt, sid, project, number, cleaned)
        return None

    return memory_session


def make_memory_observe(opts: Options, env: BuiltinEnv) -> HookFunction:
    skip = frozenset(opts.get("skip_tools", SKIP_TOOLS))
    input_chars = int(opts.get("input_chars", INPUT_CHARS))
    response_chars = int(opts.get("response_chars", RESPONSE_CHARS))
    store_for = _store_opener(env)

    async def memory_observe(payload: dict[str, Any], ctx: HookContext) -> None:
        tool = str(payload.get("tool_name") or "")
        if not tool or tool in skip or ctx.state.get("memory_prompt_private"):
            return None
        def observation() -> str:
            # Stripping and redaction are CPU work on up to megabytes of output: done in the worker thread.
            raw_input = payload.get("tool_input")
            if tool == "Bash" and isinstance(raw_input, dict) and isinstance(raw_input.get("command"), str):
                # What the agent ran, as it wrote it: not env-isolation's `unset …;` prefix (hooks/builtin).
                raw_input = {**raw_input, "command": display_command(raw_input["command"])}
            tool_input = clean_value(raw_input, input_chars)
            response = clean_value(payload.get("tool_response"), response_chars)
            return f"{tool} {tool_input}\n-> {response}".strip()

        text = await anyio.to_thread.run_sync(observation)
        store = await store_for(ctx)
        sid = _session_id(ctx, payload)
        number = ctx.state.get("memory_prompt_number") or await store.run(store.current_prompt_number, sid)
        project = await _project_key(env, ctx, payload, store)
        await store.run(store.add_observation, sid, project, int(number), tool, text)
        return None

    return memory_observe


def make_memory_summary(opts: Options, env: BuiltinEnv) -> HookFunction:
    summarizer: Summarizer | None = opts.get("summarizer")
    store_for = _store_opener(env)

    async def memory_summary(payload: dict[str, Any], ctx: HookContext) -> None:
        if ctx.state.get("memory_prompt_private"):
            return None
        user = ctx.state.get("last_prompt")
        reply = payload.get("last_assistant_message")
        if not user or not reply:
            t_user, t_reply = await anyio.to_thread.run_sync(last_messages, payload.get("transcript_path"))
            user = user or (clean_text(t_user, PROMPT_CHARS) if t_user else None)
            reply = reply or t_reply
        reply_clean = clean_text(str(reply or ""), 8000)
        if not user and not reply_clean:
            return None
        request = f"Request: {extractive(user or '(not recorded)', REQUEST_CHARS)}"
        outcome = f"Outcome: {extractive(reply_clean, OUTCOME_CHARS)}" if reply_clean else "Outcome: (no reply)"
        if summarizer is not None and reply_clean:
            try:
                compressed = await summarizer.summarize(user or "", reply_clean)
            except Exception as exc:  # a model failure must not lose the extractive summary
                ctx.log.warning("memory-summary: summarizer failed (%s); keeping the extractive summary", exc)
                compressed = None
            if compressed:
                outcome = f"Outcome: {clean_text(compressed, OUTCOME_CHARS)}"
        store = await store_for(ctx)
        sid = _session_id(ctx, payload)
        number = ctx.state.get("memory_prompt_number") or await store.run(store.current_prompt_number, sid)
        project = await _project_key(env, ctx, payload, store)
        await store.run(store.upsert_summary, sid, project, int(number), request, outcome)
        return None

    return memory_summary


def make_memory_complete(opts: Options, env: BuiltinEnv) -> HookFunction:
    store_for = _store_opener(env)

    async def memory_complete(payload: dict[str, Any], ctx: HookContext) -> None:
        if not await anyio.to_thread.run_sync(memory_exists, env.data(ctx)):
            return None
        store = await store_for(ctx)
        await store.run(store.complete_session, _session_id(ctx, payload), payload.get("reason"))
        return None

    return memory_complete


def make_memory_related(opts: Options, env: BuiltinEnv) -> HookFunction:
    """Opt-in (the user's own settings): at the session's first prompt, the past observations most related to it,
    by words and by meaning, within memory-context's budget (docs/BUILTIN_HOOKS.md)."""
    n_observations = int(opts.get("observations", 5))
    share = int(opts.get("max_chars", RELATED_CHARS))
    total = int(opts.get("budget", CONTEXT_CHARS))
    if n_observations < 1 or share < 100 or share > total:
        raise ValueError("observations must be >= 1 and 100 <= max_chars <= budget")
    env.caches[RELATED_RESERVE] = share
    store_for = _store_opener(env)

    async def memory_related(payload: dict[str, Any], ctx: HookContext) -> HookOutput | None:
        if ctx.state.get("memory-related:done"):
            return None
        ctx.state["memory-related:done"] = True
        prompt = payload.get("prompt")
        if not isinstance(prompt, str) or not await anyio.to_thread.run_sync(memory_exists, env.data(ctx)):
            return None
        query = clean_text(prompt, PROMPT_CHARS)  # what is private is not searched for either
        if not query:
            return None
        store = await store_for(ctx)
        project = await _project(env, ctx, payload)
        key = store.project_key(project.id, project.path)
        sid = _session_id(ctx, payload)
        hits = await store.run(lambda: store.search(query, project=key, limit=max(20, n_observations * 4)))
        shown = ctx.state.get(CONTEXT_SHOWN) or set()
        room = total - int(ctx.state.get(CONTEXT_USED, 0))
        header = f"Earlier work in project '{project.name}' related to this request, from Orion's memory (most related first):"
        body, count = header + "\n", 0
        for hit in hits:
            if hit["kind"] != "observation" or hit["sessionId"] == sid or hit["text"] in shown:
                continue
            tool = hit["text"].split(" ", 1)[0]
            line = f"- [{tool}] {clip(' '.join(hit['text'].split()), 300)}"
            if len(body) + len(line) + 1 > room:  # the one budget: what memory-context left (at least `share`)
                break
            body += line + "\n"
            count += 1
            if count >= n_observations:
                break
        if count == 0:
            return None
        return context("UserPromptSubmit", f"<memory-context>\n{body}</memory-context>")

    return memory_related
