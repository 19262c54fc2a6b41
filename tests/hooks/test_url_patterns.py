"""allowedHttpHookUrls patterns match a parsed URL part by part (hooks/url_patterns.py): the spellings that carried
another host past a pattern read as one string, and the forms people write, through the hook set as a user would."""

from __future__ import annotations

import pytest

from hooks.url_patterns import pattern_problem, url_matches, url_problem


@pytest.mark.parametrize(("url", "pattern"), [
    # user info: the host is the part after @
    ("http://127.0.0.1:1@otherhost/x", "http://127.0.0.1:*/*"),
    ("http://127.0.0.1:1@otherhost/x", "http://127.0.0.1:*"),
    ("https://hooks.example.com@attacker.test/", "https://hooks.example.com*"),
    # the query or the path is not the host
    ("https://attacker.test/?.example.com/x", "https://*.example.com/*"),
    ("https://attacker.test/.example.com/x", "https://*.example.com/*"),
    ("https://attacker.test#.example.com/x", "https://*.example.com/*"),
    # a host that only starts like the allowed one
    ("https://hooks.example.com.attacker.test/x", "https://hooks.example.com/*"),
    ("https://example.com/x", "https://*.example.com/*"),
    # another port or scheme than the pattern's
    ("https://hooks.example.com:8443/x", "https://hooks.example.com/*"),
    ("http://hooks.example.com/x", "https://hooks.example.com/*"),
    ("https://hooks.example.com/other", "https://hooks.example.com/hook"),
])
def test_a_url_that_only_reads_like_an_allowed_one_is_refused(url: str, pattern: str) -> None:
    assert not url_matches(url, pattern)


@pytest.mark.parametrize(("url", "pattern"), [
    ("http://127.0.0.1:9/a", "http://127.0.0.1:*"),
    ("http://127.0.0.1:9/a?b=1", "http://127.0.0.1:*/*"),
    ("https://a.b.example.com/hook", "https://*.example.com/*"),
    ("https://HOOKS.example.com/x", "https://hooks.example.com/*"),
    ("https://hooks.example.com:443/x", "https://hooks.example.com/*"),
    ("https://hooks.example.com", "https://hooks.example.com"),
    ("https://hooks.example.com/hook", "https://hooks.example.com/hook"),
    ("http://[::1]:8080/x", "http://[::1]:*/*"),
])
def test_the_forms_people_write_match_as_they_mean(url: str, pattern: str) -> None:
    assert url_matches(url, pattern)


def test_user_info_and_broken_urls_are_refused_with_the_reason() -> None:
    assert "user info" in (url_problem("http://u:p@example.com/") or "")
    assert "user info" in (url_problem("http://127.0.0.1:1@otherhost/x") or "")
    assert "does not parse" in (url_problem("http://example.com:port/") or "")
    assert url_problem("https://example.com/x") is None
    assert pattern_problem("example.com/*") is not None and pattern_problem("http://u@h/*") is not None
    assert pattern_problem("https://*.example.com/*") is None


def test_through_the_hook_set_a_user_info_url_is_invalid_whatever_the_list(project, tmp_path) -> None:
    from tests.hooks.test_claude_user_source import _claude_user, _one

    claude_user = _claude_user(tmp_path, {"type": "http", "url": "http://127.0.0.1:1@otherhost/x", "name": "smuggled"},
                               {"type": "http", "url": "https://attacker.test/?.example.com/x", "name": "query"},
                               {"type": "http", "url": "http://127.0.0.1:9/ok", "name": "ok"},
                               allowedHttpHookUrls=["http://127.0.0.1:*/*", "https://*.example.com/*"])
    hs = project.load(claude_user_settings=claude_user)
    assert _one(hs, "smuggled").state == "invalid" and "user info" in _one(hs, "smuggled").reason
    assert _one(hs, "query").state == "invalid" and "matches no allowedHttpHookUrls" in _one(hs, "query").reason
    assert _one(hs, "ok").state == "active"
