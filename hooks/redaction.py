"""The one redaction every byte Orion writes passes: secret detection over text and over decoded JSON-like values.

Writers call `redact_value` on a structure *before* encoding it (or `redact`
on a plain string); never on an already JSON-encoded string, although the
patterns also hold there (an escaped newline `\\n` counts as a boundary) as a
second line of defence. The formats are the documented shapes of each vendor's
credentials (docs/SECURITY.md, "Secrets and files", lists them and the sources);
the corpus in tests/security/secret_samples.py and `bench/secret_corpus.py`
keep the coverage and the false-positive rate measured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_END = r"(?![A-Za-z0-9])"

# Every alternative is a literal prefix then runs of single character classes:
# matching stays linear, nothing can backtrack catastrophically, and sre's
# branch op rejects an alternative on its first literal character, so one
# combined pattern costs one pass over the text.
_TOKEN_KINDS: tuple[tuple[str, str], ...] = (
    # AI providers
    ("anthropic-api-key", r"sk-ant-[A-Za-z0-9_\-]{20,}"),
    ("openai-api-key", r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{20,}|sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}"
                       r"|sk-[A-Za-z0-9]{32,}" + _END),
    ("openrouter-api-key", r"sk-or-v1-[a-f0-9]{64}"),
    ("huggingface-token", r"hf_[A-Za-z]{34}" + _END + r"|api_org_[A-Za-z]{34}" + _END),
    ("groq-api-key", r"gsk_[A-Za-z0-9]{48,}"),
    ("xai-api-key", r"xai-[A-Za-z0-9]{60,}"),
    ("replicate-token", r"r8_[A-Za-z0-9]{37}" + _END),
    ("perplexity-api-key", r"pplx-[A-Za-z0-9]{40,}"),
    # clouds
    ("aws-access-key-id", r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA)[0-9A-Z]{16}" + _END),
    ("google-api-key", r"AIza[0-9A-Za-z_\-]{35}" + _END),
    ("google-oauth-client-secret", r"GOCSPX-[A-Za-z0-9_\-]{28}" + _END),
    ("google-oauth-token", r"ya29\.[0-9A-Za-z_\-]{20,}"),
    ("firebase-cloud-messaging-key", r"AAAA[A-Za-z0-9_\-]{7}:[A-Za-z0-9_\-]{140}"),
    ("azure-storage-key", r"AccountKey=[A-Za-z0-9+/]{86}=="),
    ("azure-sas-signature", r"sig=[A-Za-z0-9%+/]{40,}(?:=|%3[Dd]){0,2}"),
    ("digitalocean-token", r"do[opr]_v1_[a-f0-9]{64}"),
    ("heroku-api-key", r"HRKU-[A-Za-z0-9_\-]{30,}"),
    ("fly-io-token", r"fo1_[A-Za-z0-9_\-]{39,}"),
    ("databricks-token", r"dapi[a-f0-9]{32}(?:-[0-9])?" + _END),
    ("supabase-token", r"sbp_[a-f0-9]{40}"),
    ("planetscale-token", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.]{32,}"),
    ("vault-token", r"hv[sb]\.[A-Za-z0-9_\-]{24,}"),
    ("doppler-token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}"),
    ("pulumi-token", r"pul-[a-f0-9]{40}"),
    # code hosting and package registries
    ("github-token", r"gh[pousr]_[A-Za-z0-9]{36,}"),
    ("github-pat", r"github_pat_[A-Za-z0-9_]{40,}"),
    ("gitlab-token", r"gl(?:pat|dt|rt|ptt|ft|soat|cbt|imt)-[A-Za-z0-9_\-]{20,}"),
    ("npm-token", r"npm_[A-Za-z0-9]{36}" + _END),
    ("pypi-token", r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}"),
    ("docker-hub-pat", r"dckr_pat_[A-Za-z0-9_\-]{27,}"),
    ("atlassian-api-token", r"ATATT3[A-Za-z0-9_\-=]{50,}"),
    ("postman-api-key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("linear-api-key", r"lin_api_[A-Za-z0-9]{40}"),
    ("notion-token", r"ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43}" + _END),
    ("airtable-pat", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    ("shopify-token", r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    # messaging, payments, email
    ("slack-token", r"xox[abposre]-[0-9A-Za-z\-]{10,}|xoxe\.xox[bp]-[0-9]-[A-Za-z0-9]{100,}"),
    ("slack-app-token", r"xapp-[0-9]-[A-Za-z0-9\-]{20,}"),
    ("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,}"),
    ("discord-webhook", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_\-]{60,}"),
    ("stripe-key", r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}"),
    ("stripe-webhook-secret", r"whsec_[A-Za-z0-9]{32,}"),
    ("square-token", r"sq0(?:atp|csp)-[0-9A-Za-z_\-]{22,}"),
    ("twilio-api-key", r"SK[0-9a-fA-F]{32}" + _END),
    ("sendgrid-api-key", r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _END),
    ("mailgun-api-key", r"key-[0-9a-f]{32}" + _END),
    ("new-relic-key", r"NR(?:AK|JS|II)-[A-Z0-9]{27}" + _END),
    ("grafana-token", r"glc_[A-Za-z0-9+/]{32,}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    ("sentry-token", r"sntry[su]_[A-Za-z0-9+/=_\-]{40,}"),
    # generic shapes
    ("age-secret-key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("jwt", r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
)
# Formats without a literal prefix, each with the literal it must contain: tried only when the text holds it.
_UNPREFIXED_KINDS: tuple[tuple[str, str, str], ...] = (
    ("azure-ad-client-secret", r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}" + _END, "Q~"),
    ("azure-devops-pat", r"[A-Za-z0-9]{76}AZDO[A-Za-z0-9]{4}" + _END, "AZDO"),
    ("terraform-cloud-token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,}", ".atlasv1."),
    ("telegram-bot-token", r"[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}" + _END, ":AA"),
    ("mailchimp-api-key", r"[0-9a-f]{32}-us[0-9]{1,2}" + _END, "-us"),
)
_ALL_KINDS: tuple[tuple[str, str], ...] = (*_TOKEN_KINDS, *((k, rx) for k, rx, _ in _UNPREFIXED_KINDS))
_RUN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.+/=~:%")


def _first_chars(rx: str) -> frozenset[str]:
    """The characters a match of `rx` can start with (every run character when that cannot be worked out)."""
    try:
        from re import _constants as c  # type: ignore[attr-defined]
        from re import _parser as parser  # type: ignore[attr-defined]
    except ImportError:  # another Python's internals: correct, only slower
        return _RUN_CHARS

    def first(items: list) -> set[str] | None:
        if not items:
            return None
        op, av = items[0]
        if op is c.LITERAL:
            return {chr(av)}
        if op is c.SUBPATTERN:
            return first(list(av[3]))
        if op is c.BRANCH:
            out: set[str] = set()
            for alternative in av[1]:
                found = first(list(alternative))
                if found is None:
                    return None
                out |= found
            return out
        if op is c.IN:
            out = set()
            for item_op, item in av:
                if item_op is c.LITERAL:
                    out.add(chr(item))
                elif item_op is c.RANGE:
                    out.update(chr(x) for x in range(item[0], item[1] + 1))
                else:
                    return None
            return out
        return None

    try:
        found = first(list(parser.parse(rx)))
    except Exception:
        found = None
    return frozenset(found) if found else _RUN_CHARS


_UNSET = object()


class _TokenTable:
    """Which formats can start with which character, compiled per character on first need.

    Compiling every alternation up front cost ~25 ms at import (on the sidecar's first log line, on the
    event loop); a text needs the patterns of only a few characters. No capture groups in the alternations,
    so sre's branch op rejects an alternative on its first literal without entering it; the kind is looked
    up after a hit. Races between threads only compile a pattern twice.
    """

    def __init__(self, kinds: tuple[tuple[str, str], ...]) -> None:
        self._kinds = kinds
        self._sources: dict[str, list[str]] | None = None
        self._compiled: dict[str, re.Pattern[str] | None] = {}
        self._candidates: re.Pattern[str] | None = None

    def _by_char(self) -> dict[str, list[str]]:
        if self._sources is None:
            groups: dict[str, list[str]] = {}
            for _, rx in self._kinds:
                for ch in _first_chars(rx):
                    groups.setdefault(ch, []).append(rx)
            self._sources = groups
        return self._sources

    def pattern(self, ch: str) -> re.Pattern[str] | None:
        compiled = self._compiled.get(ch, _UNSET)
        if compiled is _UNSET:
            sources = self._by_char().get(ch)
            compiled = re.compile("|".join(f"(?:{rx})" for rx in sources)) if sources else None
            self._compiled[ch] = compiled
        return compiled  # type: ignore[return-value]

    def candidates(self) -> re.Pattern[str]:
        # A word start whose first character begins some format; `n`, `r`, `t` also for an escape (`\nAKIA…`).
        if self._candidates is None:
            chars = "".join(sorted(set(self._by_char()) | set("nrt")))
            self._candidates = re.compile(r"(?<![A-Za-z0-9_])[" + re.escape(chars).replace("]", r"\]") + "]")
        return self._candidates


_PREFIXED = _TokenTable(_TOKEN_KINDS)
# With the unprefixed formats every character can start a token: used only for a text holding a marker.
_EVERY = _TokenTable(_ALL_KINDS)
_RUN = re.compile(r"[A-Za-z0-9_\-.+/=~:%]{15,}")
_HEADER_TOKENS = re.compile(
    r"(?P<bearer>(?i:bearer)\s+[A-Za-z0-9_\-.=+/~]{20,})|(?P<basic>(?i:basic)\s+[A-Za-z0-9+/]{12,}={0,2}" + _END + ")"
)

# `scheme://user:password@host` (the user may be empty: `redis://:pw@host`; slashes may be JSON-escaped):
# anchored on the literal `://`, only the credentials are secret.
_URL_CREDENTIALS = re.compile(r":(?:\\?/){2}([^\s/:@\\\"']{0,64}:[^\s/@\\\"']{3,128})@")
# `.netrc`: `machine host login user password secret` (one line or several).
_NETRC = re.compile(r"(?:^|\s|\\n)(?:password|passwd|account)[ \t]+([^\s\\\"']{4,})")
_NETRC_HINT = ("machine", "login")
# A command-line flag: `--password hunter22`, `--token=abc`.
_FLAG = re.compile(r"--(?:password|passwd|token|api-key|apikey|secret|client-secret|auth-token)(?:=|[ \t]+)([^\s\\\"'-][^\s\\\"']{5,})")

# `password = "hunter22"`, `GITHUB_TOKEN: abc…`, `"auth": "dXNl…"` (Docker), `_authToken=` (npm): a
# secret-looking name, an assignment, then a value; only the value is secret. The name may be followed by
# `_suffix` / `-suffix` / `CamelSuffix` segments but not by lower-case letters (`tokenizer`, `author`).
_NAME = (
    r"(?:(?i:api[_-]?key|apikey|secret|token|passw(?:or)?d|passwd|pwd|auth[_-]?key|access[_-]?key|private[_-]?key"
    r"|client[_-]?secret|credentials?)|(?i:auth)(?=[A-Z_\-\"'\s:=\\]))"
)
_SUFFIX = r"(?:[_\-.][A-Za-z0-9]+|[A-Z][A-Za-z0-9]*){0,3}"
_ASSIGNED = re.compile(
    _NAME + "(" + _SUFFIX + ")"
    + r"(?:\\{1,7}\"|[\"'])?\s{0,3}(?::=|=>|[:=])\s{0,3}"
    + r"(?:\\{0,7}\"([^\"\n\\]{4,200})\\{0,7}\"|'([^'\n\\]{4,200})'|([^\s\"',;()\[\]{}<>$\\`|&]{4,}))"
)
_ASSIGNED_HINTS = ("key", "secret", "token", "passw", "pwd", "auth", "credential")
# Names that end in these describe the secret (where to send it, what it is called), they do not hold one.
_DESCRIPTIVE_SUFFIXES = ("endpoint", "url", "uri", "field", "name", "type", "types", "length", "len", "count",
                         "ttl", "expiry", "expires", "expiresat", "expiresin", "header", "prefix", "file", "path",
                         "dir", "env", "var", "placeholder", "label", "hint", "policy", "format", "size", "limit",
                         "required", "enabled")

_KEY_BEGIN = "-----BEGIN "
_KEY_END = "-----END "

# Documentation placeholders and obviously fake values: never worth a redaction marker.
_PLACEHOLDER_WORDS = ("xxxx", "example", "your", "placeholder", "changeme", "change_me", "change-me", "dummy",
                      "redacted", "sample", "<", ">", "...", "…", "****", "todo", "insert", "replace", "fixme")
_FILLER = frozenset("x0*.#")
_PLACEHOLDER_VALUES = frozenset({"password", "passwd", "secret", "token", "none", "null", "nil", "true", "false",
                                 "undefined", "required", "optional", "string", "hunter2", "test", "testing"})


@dataclass(slots=True, frozen=True)
class Finding:
    """One secret found in a text: what kind, and where (half-open character span)."""

    kind: str
    start: int
    end: int
    preview: str  # the first four characters then an ellipsis; never the secret itself


def is_placeholder(value: str) -> bool:
    """A documentation placeholder (`sk-xxxx`, `<your key>`, `changeme`), not a credential."""
    lower = value.lower()
    if lower in _PLACEHOLDER_VALUES:
        return True
    if any(word in lower for word in _PLACEHOLDER_WORDS):
        return True
    # `ghp_000000…`, `sk-XXXX…`: a body of filler characters is a stand-in, not a key.
    body = lower.split("_")[-1].split("-")[-1]
    return len(body) >= 8 and set(body) <= _FILLER


def _private_key_blocks(text: str) -> list[Finding]:
    # A scanner instead of a `BEGIN[\s\S]*?END` regex: str.find keeps it linear
    # even with many unmatched BEGIN lines.
    found: list[Finding] = []
    pos = 0
    while True:
        begin = text.find(_KEY_BEGIN, pos)
        if begin < 0:
            return found
        # The header is one short line; bounding it keeps the scan linear when the newline is JSON-escaped.
        header = text[begin : begin + 80]
        close = header.find("-----", len(_KEY_BEGIN))
        if close < 0 or "PRIVATE KEY" not in header[:close]:
            pos = begin + len(_KEY_BEGIN)
            continue
        end = text.find(_KEY_END, begin + len(_KEY_BEGIN))
        if end < 0:
            # An unterminated key is still a key: redact to the end of the text.
            found.append(Finding("private-key", begin, len(text), text[begin : begin + 4] + "…"))
            return found
        tail = text.find("-----", end + len(_KEY_END))
        stop = tail + 5 if tail >= 0 else len(text)
        found.append(Finding("private-key", begin, stop, text[begin : begin + 4] + "…"))
        pos = stop


def _looks_like_secret_value(value: str) -> bool:
    # Code such as `token = self.current_token` or `password: required` is not
    # a secret; a credential mixes letters with digits or is long and dense.
    if is_placeholder(value):
        return False
    lower = value.lower()
    if lower.startswith(("http://", "https://", "file://", "/", "./", "~/")):
        return False  # a URL or path; credentials inside a URL are the URL pattern's
    if value.count(" ") >= 2:
        return False  # prose, not a credential
    stripped = value.replace(".", "").replace("_", "").replace("-", "")
    if stripped.isalpha() and ("." in value or "_" in value or any(c.isupper() for c in value[1:])):
        return False  # an identifier: `self.current_token`, `read_only`, `getToken`
    if value.endswith("()") or value.startswith(("os.", "process.", "self.", "this.", "env.")):
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    return (has_digit and has_alpha and len(value) >= 6) or len(value) >= 20


def _kind_of(token: str) -> str:
    # Only after a hit, so the per-kind patterns are compiled (and kept by re's cache) on first need.
    for kind, rx in _ALL_KINDS:
        if re.fullmatch(rx, token):
            return kind
    return "token"


def _token_findings(text: str) -> list[Finding]:
    # A regex alternation tried at every character costs ~1 ms per KiB; instead cheap scans find the long
    # runs, then the word starts inside them whose first character begins some format, and only the formats
    # beginning with that character are tried there, or right after an escape such as `\n` (the escaped
    # newline of a tool's second line glued `n` onto the token and defeated a plain word boundary).
    found: list[Finding] = []
    table = _EVERY if any(marker in text for _, _, marker in _UNPREFIXED_KINDS) else _PREFIXED
    candidates = table.candidates()
    for run in _RUN.finditer(text):
        done = run.start()
        end = run.end()
        for seg in candidates.finditer(text, run.start(), end):
            start = seg.start()
            if start < done:
                continue
            pattern = table.pattern(text[start])
            m = pattern.match(text, start) if pattern is not None else None
            if m is None and start and text[start - 1] == "\\" and text[start] in "nrt" and start + 1 < end:
                pattern = table.pattern(text[start + 1])
                m = pattern.match(text, start + 1) if pattern is not None else None
            if m is None:
                continue
            value = m.group()
            if not is_placeholder(value):
                found.append(Finding(_kind_of(value), m.start(), m.end(), value[:4] + "…"))
            done = m.end()
    return found


# The name part of `_ASSIGNED` can start at most this far before the hint word it contains (`client_secret`).
_NAME_LEAD = 8
_ASSIGNED_NEAR = re.compile(r"[\s\S]{0,%d}?" % _NAME_LEAD + _ASSIGNED.pattern)


def _assigned(text: str, lower: str) -> list[Finding]:
    # Only around the hint words (found with str.find, which is fast) is the assignment pattern tried.
    hits = sorted({pos for hint in _ASSIGNED_HINTS for pos in _find_all(lower, hint)})
    found: list[Finding] = []
    done = 0
    for pos in hits:
        if pos < done:
            continue
        m = _ASSIGNED_NEAR.match(text, max(done, pos - _NAME_LEAD))
        if m is None:
            continue
        done = m.end()
        suffix = m.group(1).lower().lstrip("_-.")
        if suffix and suffix.replace("_", "").replace("-", "").endswith(_DESCRIPTIVE_SUFFIXES):
            continue
        group = 2 if m.group(2) is not None else 3 if m.group(3) is not None else 4
        value = m.group(group)
        if _looks_like_secret_value(value):
            found.append(Finding("assigned-secret", m.start(group), m.end(group), value[:4] + "…"))
    return found


def _find_all(haystack: str, needle: str) -> list[int]:
    out = []
    pos = haystack.find(needle)
    while pos >= 0:
        out.append(pos)
        pos = haystack.find(needle, pos + 1)
    return out


def _single_group(pattern: re.Pattern[str], kind: str, text: str) -> list[Finding]:
    found = []
    for m in pattern.finditer(text):
        value = m.group(1)
        if not is_placeholder(value.split(":", 1)[-1]):
            found.append(Finding(kind, m.start(1), m.end(1), value[:4] + "…"))
    return found


def find_secrets(text: str) -> list[Finding]:
    """Every secret-looking span in `text`, sorted by position, overlaps merged into the earliest finding."""
    if not text:
        return []
    raw = _private_key_blocks(text) if _KEY_BEGIN in text else []
    raw.extend(_token_findings(text))
    if "://" in text or ":\\/\\/" in text:
        raw.extend(_single_group(_URL_CREDENTIALS, "url-credentials", text))
    if "--" in text:
        raw.extend(_single_group(_FLAG, "command-line-secret", text))
    lower = text.lower()
    if any(hint in lower for hint in _NETRC_HINT):
        raw.extend(_single_group(_NETRC, "netrc-password", text))
    for word in ("bearer", "basic"):
        for pos in _find_all(lower, word):
            m = _HEADER_TOKENS.match(text, pos)
            if m is not None and not is_placeholder(m.group().split()[-1]):
                kind = "bearer-token" if m.lastgroup == "bearer" else "basic-auth"
                raw.append(Finding(kind, m.start(), m.end(), m.group()[:4] + "…"))
    raw.extend(_assigned(text, lower))
    if not raw:
        return raw
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
    """A JSON-like value with every string redacted, dict keys included; other leaves unchanged.

    A key can hold a secret too (`{"sk-live-…": 1}`); a key and its value are
    redacted separately, so `{"password": "x9y8z7w6"}` needs the key as context:
    a string value under a secret-looking key is checked as `key=value`.
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            key = redact(k) if isinstance(k, str) else k
            if isinstance(v, str) and isinstance(k, str) and v:
                v = _redact_under_key(k, v)
            else:
                v = redact_value(v)
            out[key] = v
        return out
    if isinstance(value, (list, tuple)):
        return [redact_value(v) for v in value]
    return value


def _redact_under_key(key: str, value: str) -> str:
    redacted = redact(value)
    if redacted != value or "\n" in value or len(key) > 64:
        return redacted
    # `{"password": "x9y8z7w6"}`: the secret-looking name is the dict key, not part of the string.
    probe = f"{key}={value}"
    findings = [f for f in find_secrets(probe) if f.kind == "assigned-secret" and f.start == len(key) + 1]
    if findings and findings[0].end == len(probe):
        return "[REDACTED:assigned-secret]"
    return redacted
