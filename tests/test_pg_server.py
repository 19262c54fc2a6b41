"""tests/pg_server.py starts a real server whatever PATH the run was given (a non-login root shell has no /usr/sbin)."""

from __future__ import annotations

import os

import pytest

from tests.pg_server import PgServer, find_bin_dir


@pytest.mark.skipif(os.geteuid() != 0, reason="only root runs the server through runuser (in /usr/sbin)")
def test_a_server_starts_without_sbin_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    if find_bin_dir() is None:
        pytest.fail("PostgreSQL is not installed (apt-get install postgresql, which scripts/bootstrap.sh does)")
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep) if not d.rstrip("/").endswith("sbin")]
    monkeypatch.setenv("PATH", os.pathsep.join(path))
    server = PgServer()
    try:
        import psycopg

        with psycopg.connect(server.url(), autocommit=True) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.destroy()
