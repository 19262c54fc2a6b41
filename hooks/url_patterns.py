"""`allowedHttpHookUrls` patterns, matched part by part on a parsed URL, never as one string.

A pattern is a URL whose parts may hold `*`: `https://hooks.example.com/*`, `http://127.0.0.1:*/*`,
`https://*.example.com/hook`. A URL matches when its scheme, host, port and path (with its query) each match the
pattern's. Matching the whole text instead lets a URL carry an allowed host where a host is not:
`http://127.0.0.1:1@otherhost/x` (user info: the host is `otherhost`) and `https://attacker.test/?.example.com/x`
(the query) both matched `http://127.0.0.1:*/*` / `https://*.example.com/*` as strings. Here the URL is split once
by the same parser that decides where the request goes (urllib's), and a URL with user info is refused outright.

- scheme: equal (case-insensitive), or `*`;
- host: the parsed host name, lower case, matched with `*` (which may span dots: `*.example.com` matches
  `a.b.example.com`, never `example.com.attacker.test`, whose host ends elsewhere);
- port: `*` any; a number that port; none given: the scheme's default (80, 443), so `https://x.com/*` does not
  match `https://x.com:8443/`;
- path: the pattern's path and query against the URL's path and query (`*` spans `/`); no path in the pattern
  matches only `/`, unless the pattern ends in `*` (`http://127.0.0.1:*` allows any path there, as it did read
  as text). A fragment is never sent and never compared.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(slots=True, frozen=True)
class _Pattern:
    scheme: str
    host: str
    port: str  # "*", digits, or "" (the scheme's default)
    path: str


def _split_pattern(pattern: str) -> _Pattern | None:
    scheme, sep, rest = pattern.partition("://")
    if not sep or not scheme:
        return None
    authority, slash, path = rest.partition("/")
    path = slash + path
    if "?" in authority:
        authority, _, query = authority.partition("?")
        path = "/?" + query
    if "@" in authority or not authority:
        return None
    if authority.startswith("["):  # [IPv6]:port
        end = authority.find("]")
        if end < 0:
            return None
        host, port_part = authority[1:end], authority[end + 1:]
        if port_part and not port_part.startswith(":"):
            return None
        port = port_part[1:]
    else:
        host, _, port = authority.partition(":")
    if port and port != "*" and not port.isdigit():
        return None
    if not path and authority.endswith("*"):
        path = "*"  # `http://127.0.0.1:*`: read as text, its last `*` ran on into the path; it still does
    return _Pattern(scheme.lower(), host.lower(), port, path)


def pattern_problem(pattern: str) -> str | None:
    """Why a pattern can never match (None when it is well formed)."""
    if _split_pattern(pattern) is None:
        return (f"allowedHttpHookUrls pattern {pattern!r} is not a URL pattern (scheme://host[:port][/path], `*` "
                "allowed in each part, no user info)")
    return None


def url_problem(url: str) -> str | None:
    """Why an http hook's URL is refused whatever the patterns say (None when it is acceptable)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError as exc:
        return f"url {url!r} does not parse: {exc}"
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return (f"url {url!r} carries user info (user:password@): refused, since it hides which host is called; "
                "send credentials in a header with allowedEnvVars")
    if not parts.hostname:
        return f"url {url!r} names no host"
    return None


def url_matches(url: str, pattern: str) -> bool:
    """Whether `url` is one `pattern` allows (False for a URL `url_problem` refuses or a malformed pattern)."""
    if url_problem(url) is not None:
        return False
    want = _split_pattern(pattern)
    if want is None:
        return False
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if want.scheme != "*" and not fnmatch.fnmatchcase(scheme, want.scheme):
        return False
    if not fnmatch.fnmatchcase((parts.hostname or "").lower(), want.host):
        return False
    port = parts.port if parts.port is not None else _DEFAULT_PORTS.get(scheme)
    if want.port == "":
        if port != _DEFAULT_PORTS.get(scheme):
            return False
    elif want.port != "*" and port != int(want.port):
        return False
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return fnmatch.fnmatchcase(path, want.path or "/")
