"""Secret detection and redaction shared by the built-in hooks, the memory store and the sidecar's logs and tracking."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Every alternative is a fixed prefix then a run of one character class, so
# matching is linear in the input: nothing here can backtrack catastrophically.
# One combined pattern makes one pass over the text instead of one per kind.
_TOKEN_KINDS: tuple[tuple[str, str], ...] = (
    ("anthropic-api-key", r"sk-ant-[A-Za-z0-9_\-]{20,}"),
    ("openai-api-key", r"sk-(?:proj-|svcacct-)?[A-Za-z0-9]{32,}"),
    ("aws-access-key-id", r"(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
    ("github-token", r"gh[pousr]_[A-Za-z0-9]{36,}"),
    ("github-pat", r"github_pat_[A-Za-z0-9_]{40,}"),
    ("gitlab-token", r"glpat-[A-Za-z0-9_\-]{20,}"),
    ("slack-token", r"xox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("google-api-key", r"AIza[0-9A-Za-z_\-]{35}"),
    ("stripe-key", r"(?:sk|rk)_live_[0-9A-Za-z]{16,}"),
    ("npm-token", r"npm_[A-Za-z0-9]{36}"),
    ("jwt", r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ("bearer-token", r"(?i:bearer)\s+[A-Za-z0-9_\-.=+/]{20,}"),
)
_GROUP_KIND = {f"k{i}": kind for i, (kind, _) in enumerate(_TOKEN_KINDS)}
_TOKENS = re.compile(r"\b(?:" + "|".join(f"(?P<k{i}>{rx})" for i, (_, rx) in enumerate(_TOKEN_KINDS)) + ")")
# `scheme://user:password@host`: anchored on the literal `://`, only the credentials are secret.
_URL_CREDENTIALS = re.compile(r"://([^\s/:@]{1,64}:[^\s/@]{3,128})@")
# `password = "hunter22"`, `GITHUB_TOKEN: abc...`: a secret-looking name, an
# assignment, then a value; only the value is secret.
_ASSIGNED = re.compile(
    r"(?i)(?:api[_-]?key|secret|token|passw(?:or)?d|passwd|auth[_-]?key|access[_-]?key)[A-Za-z0-9_]{0,20}"
    r"[\"']?\s{0,3}[:=]\s{0,3}[\"']?([^\s\"',;()\[\]{}<>$]{8,})"
)
_ASSIGNED_HINTS = ("key", "secret", "token", "passw")

_KEY_BEGIN = "-----BEGIN "
_KEY_END = "-----END "
_PRIVATE_KEY = "PRIVATE KEY-----"


@dataclass(slots=True, frozen=True)
class Finding:
    """One secret found in a text: what kind, and where (half-open character span)."""

    kind: str
    start: int
    end: int
    preview: str  # the first four characters then an ellipsis; never the secret itself


def _private_key_blocks(text: str) -> list[Finding]:
    # A scanner instead of a `BEGIN[\s\S]*?END` regex: str.find keeps it linear
    # even with many unmatched BEGIN lines.
    found: list[Finding] = []
    pos = 0
    while True:
        begin = text.find(_KEY_BEGIN, pos)
        if begin < 0:
            return found
        header_end = text.find("\n", begin)
        header = text[begin : header_end if header_end >= 0 else len(text)]
        if _PRIVATE_KEY not in header:
            pos = begin + len(_KEY_BEGIN)
            continue
        end = text.find(_KEY_END, begin + len(_KEY_BEGIN))
        if end < 0:
            # An unterminated key is still a key: redact to the end of the text.
            found.append(Finding("private-key", begin, len(text), text[begin : begin + 4] + "…"))
            return found
        close = text.find("-----", end + len(_KEY_END))
        stop = close + 5 if close >= 0 else len(text)
        found.append(Finding("private-key", begin, stop, text[begin : begin + 4] + "…"))
        pos = stop


def _looks_like_secret_value(value: str) -> bool:
    # Code such as `token = self.current_token` or `password: required` is not
    # a secret; a credential mixes letters with digits or is long and dense.
    if "." in value and value.replace(".", "").replace("_", "").isalpha():
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    return (has_digit and has_alpha) or len(value) >= 20


def find_secrets(text: str) -> list[Finding]:
    """Every secret-looking span in `text`, sorted by position, overlaps merged into the earliest finding."""
    if not text:
        return []
    raw = _private_key_blocks(text)
    for m in _TOKENS.finditer(text):
        raw.append(Finding(_GROUP_KIND[m.lastgroup or ""], m.start(), m.end(), text[m.start() : m.start() + 4] + "…"))
    if "://" in text:
        for m in _URL_CREDENTIALS.finditer(text):
            raw.append(Finding("url-credentials", m.start(1), m.end(1), text[m.start(1) : m.start(1) + 4] + "…"))
    lower = text.lower()
    if any(hint in lower for hint in _ASSIGNED_HINTS):
        for m in _ASSIGNED.finditer(text):
            if _looks_like_secret_value(m.group(1)):
                raw.append(Finding("assigned-secret", m.start(1), m.end(1), text[m.start(1) : m.start(1) + 4] + "…"))
    raw.sort(key=lambda f: (f.start, -f.end))
    merged: list[Finding] = []
    for f in raw:
        if merged and f.start < merged[-1].end:
            last = merged[-1]
            # A named kind says more than the generic `name = value` one.
            kind = f.kind if last.kind == "assigned-secret" else last.kind
            merged[-1] = Finding(kind, last.start, max(last.end, f.end), last.preview)
            continue
        merged.append(f)
    return merged


def redact(text: str) -> str:
    """`text` with every detected secret replaced by `[REDACTED:<kind>]`."""
    findings = find_secrets(text)
    if not findings:
        return text
    parts: list[str] = []
    pos = 0
    for f in findings:
        parts.append(text[pos : f.start])
        parts.append(f"[REDACTED:{f.kind}]")
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts)


def redact_value(value: object) -> object:
    """A JSON-like value (dicts, lists, strings) with every string redacted; other leaves unchanged."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v) for v in value]
    return value
