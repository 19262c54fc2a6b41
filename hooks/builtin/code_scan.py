"""A reading of interpreter one-liners (python -c, perl -e, node -e, …) for the guards: which paths they write, send or run."""

from __future__ import annotations

import re
from collections.abc import Callable

Verdict = tuple[str, str]

MAX_CODE_CHARS = 20_000

_STRING = re.compile(r"\"((?:[^\"\\\n]|\\.){0,2000})\"|'((?:[^'\\\n]|\\.){0,2000})'")
_LIST = re.compile(r"\[\s*((?:(?:\"[^\"\n]{0,500}\"|'[^'\n]{0,500}')\s*,\s*){0,50}(?:\"[^\"\n]{0,500}\"|'[^'\n]{0,500}'))\s*,?\s*\]")
# Calls that change files, across Python, Perl, Ruby, Node and PHP.
_WRITES = re.compile(
    r"open\s*\([^)]{0,300},\s*(?:mode\s*=\s*)?['\"][^'\"]{0,5}[wax+]|write_text|write_bytes|"
    r"\bos\.(?:remove|unlink|rename|replace|rmdir|removedirs|truncate|chmod|chown|symlink|link|makedirs|mkdir)\b|"
    r"shutil\.|\.unlink\(|\.rename\(|\.touch\(|\.rmdir\(|\.chmod\(|\bunlink\b|\brename\b|rmtree|\btruncate\b|"
    r"File\.(?:write|delete|unlink|rename|chmod|open\s*\([^)]{0,300}['\"][wa])|FileUtils\.|IO\.write|"
    r"fs\.\w{0,20}(?:[Ww]rite|[Aa]ppend|[Uu]nlink|[Rr]m|[Rr]ename|[Cc]opy|[Cc]hmod|[Tt]runcate|[Mm]kdir|[Ss]ymlink)|"
    r"[Ww]riteFile|appendFile|rmSync|renameSync|copyFileSync|truncateSync|symlinkSync|file_put_contents|fopen\s*\([^)]{0,300}['\"][wax]|\bcopy\s*\(|"
    r"open\s*\(?\s*(?:my\s+)?[$\w]{0,40}\s*,\s*['\"]\s*\+?>|open\s*\(?\s*[$\w]{1,40}\s*,\s*['\"]>"
)
_NETWORK = re.compile(
    r"urllib|requests\.|http\.client|\bsocket\b|fetch\s*\(|XMLHttpRequest|Net::|LWP|HTTP::|axios|aiohttp|httpx|"
    r"smtplib|ftplib|TCPSocket|net\.connect|https?\.request|curl_exec|fsockopen"
)
_SHELL = re.compile(
    r"\bsystem\s*\(|subprocess|popen|Popen|spawn|\bexec[lv]?p?e?\s*\(|execSync|execFile|child_process|`|\bqx|%x\{|"
    r"shell_exec|passthru|proc_open|os\.exec|do shell script"
)
# Code that runs other code given as data: the scan cannot see what that is.
_RUNS = re.compile(
    r"\b(?:exec|eval|compile)\s*\(|\beval\b|__import__\s*\(\s*[^'\"\s]|getattr\s*\(|globals\s*\(\)|"
    r"\bFunction\s*\(|require\s*\(\s*[^'\"\s)]|\bloadstring\s*\("
)
# Text decoded at run time: harmless alone, unreadable when it reaches a write, a socket or a shell.
_DECODES = re.compile(
    r"base64|b64decode|fromhex|codecs\.decode|rot13|\bchr\s*\(|String\.fromCharCode|atob\s*\(|unhexlify|"
    r"\bpack\s*\(|\\x[0-9a-fA-F]{2}|\\u00[0-9a-fA-F]{2}"
)
_PATHISH = re.compile(r"[~./]|^[\w.-]+$")


def _literals(code: str) -> list[str]:
    out = []
    for m in _STRING.finditer(code):
        raw = m.group(1) if m.group(1) is not None else m.group(2)
        out.append(raw.replace("\\\\", "\\").replace("\\'", "'").replace('\\"', '"'))
    return out


def scan_code(
    code: str,
    path_verdict: Callable[[str], Verdict | None],
    shell_verdict: Callable[[str], Verdict | None],
) -> Verdict | None:
    """("deny"|"ask", why) for a one-liner, or None when it touches nothing the guards protect."""
    if len(code) > MAX_CODE_CHARS:
        return "ask", "is too long to check"
    writes = bool(_WRITES.search(code))
    sends = bool(_NETWORK.search(code))
    shells = bool(_SHELL.search(code))
    literals = _literals(code)
    worst: Verdict | None = None
    if shells:
        commands = literals + [" ".join(_literals(m.group(0))) for m in _LIST.finditer(code)]
        for command in commands:
            if " " in command or command.isalnum():
                found = shell_verdict(command)
                if found and (worst is None or found[0] == "deny"):
                    worst = (found[0], f"runs a shell command that {found[1].removeprefix('it ')}")
                    if found[0] == "deny":
                        return worst
    for literal in literals:
        path = literal.strip().lstrip("+<>|").strip()
        if not path or len(path) > 1000 or not _PATHISH.search(path) or " " in path:
            continue
        verdict = path_verdict(path)
        if verdict is None:
            continue
        level, why = verdict
        if writes:
            found = (level, f"changes {path}: {why}")
        elif sends and level == "deny":
            found = ("deny", f"sends {path} over the network: {why}")
        else:
            continue
        if found[0] == "deny":
            return found
        worst = worst or found
    if worst is None and (_RUNS.search(code) or (_DECODES.search(code) and (writes or sends or shells))):
        worst = ("ask", "builds what it does at run time, so the guard cannot read it")
    return worst
