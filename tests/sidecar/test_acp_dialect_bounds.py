"""What an ACP connection keeps per session is bounded (issue 27): the event counters of the most recently used
sessions only, however many sessions a long-lived connection starts and ends."""

from __future__ import annotations

from sidecar.acp.dialect import MAX_TRACKED_SESSIONS, AcpDialect


def test_event_counters_are_kept_for_the_recent_sessions_only() -> None:
    dialect = AcpDialect({"_meta": {"orion": {"events": True}}})
    assert [dialect._extension({"sessionId": "live"}, None)["seq"] for _ in range(3)] == [1, 2, 3]
    for i in range(3 * MAX_TRACKED_SESSIONS):
        dialect._extension({"sessionId": f"s{i}"}, None)
        if i % 100 == 0:
            dialect._extension({"sessionId": "live"}, None)  # used all along: never dropped
    assert len(dialect._seq) == MAX_TRACKED_SESSIONS
    used = len(range(0, 3 * MAX_TRACKED_SESSIONS, 100))
    assert dialect._extension({"sessionId": "live"}, None)["seq"] == 3 + used + 1
