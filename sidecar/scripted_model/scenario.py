"""The scenario format of the scripted model: pydantic models, loading with file-and-path errors, and request matching.

A scenario says what the model answers: ordered ``turns`` consumed one per
main-loop request, ``rules`` tried before the turns, a ``default`` once the
turns run out and a ``side_reply`` for requests that carry no tools (title
generation, one-shot evaluations). See docs/SCRIPTED_MODEL.md.

Exceptions::

    ScenarioError(ValueError)        the file is missing, unreadable or invalid

Error messages name the file, the place in it and the rule broken, never its content: a path that is
not a scenario (``/etc/shadow``) must not come back, even in part, in an error or a log line.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence"]


class ScenarioError(ValueError):
    """A scenario file could not be read or does not follow the format; the message names file and path."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Usage(_Strict):
    input_tokens: int = 10
    output_tokens: int = 5
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


class ToolUse(_Strict):
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class Block(_Strict):
    """One content block; exactly one of ``text``, ``thinking`` or ``tool_use``."""

    text: str | None = None
    thinking: str | None = None
    tool_use: ToolUse | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_text(cls, value: Any) -> Any:
        return {"text": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _exactly_one(self) -> Block:
        present = [k for k in ("text", "thinking", "tool_use") if getattr(self, k) is not None]
        if len(present) != 1:
            raise ValueError(f"a block needs exactly one of text, thinking, tool_use (got {present or 'none'})")
        return self

    @property
    def kind(self) -> str:
        return "text" if self.text is not None else "thinking" if self.thinking is not None else "tool_use"


class ApiError(_Strict):
    """An error answer instead of a message: the HTTP status and the API's error type and message (a 400
    `invalid_request_error`, a 429 `rate_limit_error`, a 529 `overloaded_error`...)."""

    status: int = Field(ge=400, le=599)
    type: str = "api_error"
    message: str = "scripted error"


class Reply(_Strict):
    """What the model answers to one request. A bare string or list of blocks is accepted as shorthand; `error`
    answers with an API error instead of content."""

    content: list[Block] = Field(default_factory=list)
    stop_reason: StopReason | None = None
    usage: Usage | None = None
    error: ApiError | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"content": [{"text": value}]}
        if isinstance(value, list):
            return {"content": value}
        return value

    @model_validator(mode="after")
    def _content_or_error(self) -> Reply:
        if self.error is None and not self.content:
            raise ValueError("a reply needs at least one block (or an error)")
        if self.error is not None and self.content:
            raise ValueError("a reply is either content or an error, not both")
        return self

    def effective_stop_reason(self) -> str:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(b.tool_use is not None for b in self.content) else "end_turn"


class When(_Strict):
    """All given conditions must hold (AND). ``*_contains`` is a substring test, ``*_matches`` a regex search."""

    last_user_contains: str | None = None
    last_user_matches: str | None = None
    last_tool_result_contains: str | None = None
    last_tool_result_matches: str | None = None
    system_contains: str | None = None
    system_matches: str | None = None
    any_message_contains: str | None = None
    tool_result_is_error: bool | None = None
    has_tools: bool | None = None

    @field_validator("last_user_matches", "last_tool_result_matches", "system_matches")
    @classmethod
    def _valid_regex(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"invalid regular expression: {exc}") from None
        return pattern

    @model_validator(mode="after")
    def _not_empty(self) -> When:
        if all(getattr(self, name) is None for name in type(self).model_fields):
            raise ValueError("'when' needs at least one condition")
        return self


class Rule(_Strict):
    name: str | None = None
    when: When
    reply: Reply
    once: bool = False


class Scenario(_Strict):
    name: str = "scenario"
    description: str = ""
    turns: list[Reply] = Field(default_factory=list)
    rules: list[Rule] = Field(default_factory=list)
    default: Reply = Field(default_factory=lambda: Reply.model_validate("(scripted model: no more turns)"))
    side_reply: Reply = Field(default_factory=lambda: Reply.model_validate("Scripted session"))
    usage: Usage = Field(default_factory=Usage)
    text_chunk: int = Field(default=16, ge=1, description="characters per text/thinking/tool-input delta")
    delta_delay_ms: int = Field(default=0, ge=0, description="pause after each delta, to make streaming visible")
    model: str = "claude-scripted-1"

    def rule_label(self, index: int) -> str:
        rule = self.rules[index]
        return f"rule:{rule.name}" if rule.name else f"rule:{index}"


# --------------------------------------------------------------------------- loading


def _known_keys() -> frozenset[str]:
    models: tuple[type[BaseModel], ...] = (Scenario, Rule, When, Reply, Block, ToolUse, Usage)
    return frozenset(name for model in models for name in model.model_fields)


def _format_loc(loc: tuple[Any, ...]) -> str:
    known = _known_keys()
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        # A key the format does not know is the file's content, not ours to repeat.
        name = str(part) if str(part) in known else "<unknown key>"
        out += f".{name}" if out else name
    return out or "(top level)"


def parse_scenario(data: Any, source: str = "<scenario>") -> Scenario:
    """Validate already-decoded scenario data; errors name ``source`` and the path inside it."""
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors(include_input=False, include_url=False):
            # Pydantic reports the shorthand-coercion step as a loc part; it means nothing to an author.
            loc = tuple(p for p in err["loc"] if not str(p).startswith("function-"))
            message = _unknown_key_message(err["loc"]) if err["type"] == "extra_forbidden" else err["msg"]
            lines.append(f"  {source}: {_format_loc(loc)}: {message}")
        shown = lines[:_MAX_ERRORS_SHOWN]
        if len(lines) > len(shown):
            shown.append(f"  ... and {len(lines) - len(shown)} more")
        raise ScenarioError(f"invalid scenario {source}:\n" + "\n".join(shown)) from None


_MAX_ERRORS_SHOWN = 20


def _unknown_key_message(loc: tuple[Any, ...]) -> str:
    """Help with a typo by naming the format's key it resembles; the unknown key itself is not repeated."""
    close = difflib.get_close_matches(str(loc[-1]) if loc else "", sorted(_known_keys()), n=1, cutoff=0.75)
    return f"unknown key (did you mean {close[0]!r}?)" if close else "unknown key, not part of the scenario format"


def _yaml_where(exc: yaml.YAMLError) -> str:
    """Line and column of a YAML error, and the parser's complaint with any quoted text of the file cut out."""
    mark = getattr(exc, "problem_mark", None)
    problem = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", str(getattr(exc, "problem", "") or ""))
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return f": {problem}{where}" if problem else where


def load_scenario(path: str | Path) -> Scenario:
    """Read a .yaml/.yml/.json scenario file. The scenario's name defaults to the file's stem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"cannot read scenario {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{path}: not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{path}: not valid YAML{_yaml_where(exc)}") from None
    if data is None:
        data = {}
    if isinstance(data, dict) and "name" not in data:
        data = {**data, "name": path.stem}
    return parse_scenario(data, str(path))


# --------------------------------------------------------------------------- matching


@dataclass(slots=True, frozen=True)
class RequestView:
    """The parts of a Messages API request that rules look at."""

    last_user_text: str
    last_tool_result_text: str
    tool_result_is_error: bool
    system_text: str
    all_text: str
    has_tools: bool

    @classmethod
    def of(cls, body: dict[str, Any]) -> RequestView:
        messages = body.get("messages") or []
        last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
        user_text, result_text, is_error = "", "", False
        if last_user is not None:
            content = last_user.get("content")
            if isinstance(content, str):
                user_text = content
            else:
                texts, results = [], []
                for block in content or []:
                    if block.get("type") == "text":
                        texts.append(block.get("text", ""))
                    elif block.get("type") == "tool_result":
                        results.append(content_text(block.get("content")))
                        is_error = is_error or bool(block.get("is_error"))
                user_text, result_text = "\n".join(texts), "\n".join(results)
        return cls(
            last_user_text=user_text,
            last_tool_result_text=result_text,
            tool_result_is_error=is_error,
            system_text=content_text(body.get("system")),
            all_text="\n".join(content_text(m.get("content")) for m in messages),
            has_tools=bool(body.get("tools")),
        )


def content_text(content: Any) -> str:
    """Flatten a Messages API content value (string, block list, system list) to its text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                if "text" in block:
                    parts.append(str(block["text"]))
                elif "content" in block:
                    parts.append(content_text(block["content"]))
        return "\n".join(parts)
    return str(content)


def matches(when: When, view: RequestView) -> bool:
    checks: list[tuple[str | None, str, bool]] = [
        (when.last_user_contains, view.last_user_text, False),
        (when.last_user_matches, view.last_user_text, True),
        (when.last_tool_result_contains, view.last_tool_result_text, False),
        (when.last_tool_result_matches, view.last_tool_result_text, True),
        (when.system_contains, view.system_text, False),
        (when.system_matches, view.system_text, True),
        (when.any_message_contains, view.all_text, False),
    ]
    for wanted, text, is_regex in checks:
        if wanted is None:
            continue
        if is_regex and re.search(wanted, text) is None:
            return False
        if not is_regex and wanted not in text:
            return False
    if when.tool_result_is_error is not None and when.tool_result_is_error != view.tool_result_is_error:
        return False
    if when.has_tools is not None and when.has_tools != view.has_tools:
        return False
    return True
