"""Schema 5 of the team's PostgreSQL memory (a real server): an observation's idempotency key kept as 16 bytes and a
session's observations found by a hash index. A database written at schema 4 keeps every row through the migration,
a key written before it still stops its own replay after it, and the indexes are the smaller ones."""

from __future__ import annotations

from pathlib import Path

import psycopg

import hooks.memory.pg_store as pg_module
from hooks.memory.pg_store import SCHEMA
from tests.memory.test_meaning_postgres import open_as, sql, stores  # noqa: F401  (the `stores` fixture)


def at_schema_4(url: str) -> None:
    """The database as a release at schema 4 left it, with a session and three observations keyed as it keyed them:
    a uuid's hex, an import's `import:<installation>:<id>`, anything a caller passed."""
    with psycopg.connect(url, autocommit=True) as conn:
        with conn.transaction():
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
            conn.execute(f"CREATE TABLE {SCHEMA}.schema_version (version INTEGER NOT NULL)")
            for version in range(1, 5):
                for statement in pg_module.split_sql(pg_module.MIGRATIONS[version]):
                    conn.execute(statement)
                conn.execute(f"INSERT INTO {SCHEMA}.schema_version VALUES (%s)", (version,))


KEYS = ["5c23a0852a7248e9a33ae77a77c571dd", "import:inst_1:42", "a caller's own key"]


def test_a_schema_4_database_keeps_its_rows_and_its_keys_still_stop_a_replay(pg_server, tmp_path: Path,
                                                                              stores) -> None:  # noqa: F811
    url = pg_server.create_database()
    at_schema_4(url)
    with psycopg.connect(url) as conn:
        conn.execute(f"INSERT INTO {SCHEMA}.sessions (owner, team, shared, session_id, project, started_at,"
                     " updated_at) VALUES ('someone', 'core', false, 's1', 'p1', 0, 0)")
        for n, key in enumerate(KEYS):
            conn.execute(f"INSERT INTO {SCHEMA}.observations (obs_key, owner, team, shared, session_id, project,"
                         " prompt_number, tool_name, text, created_at) VALUES (%s, 'someone', 'core', false, 's1',"
                         " 'p1', 1, 'Bash', %s, %s)", (key, f"the step {n} ran", n))
    store = stores(open_as(url, tmp_path / "alice", "alice"))  # opening migrates
    assert sql(url, "SELECT max(version) FROM schema_version") == [(pg_module.SCHEMA_VERSION,)]
    assert sql(url, "SELECT text FROM observations ORDER BY id") == [(f"the step {n} ran",) for n in range(3)]
    assert sql(url, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid ="
                    f" '{SCHEMA}.observations'::regclass AND attname = 'obs_key'") == [("uuid",)]
    assert sql(url, "SELECT amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam"
                    f" WHERE c.oid = '{SCHEMA}.observations_by_session'::regclass") == [("hash",)]
    # each old key is now its 16 bytes: the same key written again (a spooled write replayed, an import re-run) is
    # the same row, and nothing is added
    with psycopg.connect(url) as conn:
        for key in KEYS:
            conn.execute(f"INSERT INTO {SCHEMA}.observations (obs_key, owner, team, shared, session_id, project,"
                         f" prompt_number, tool_name, text, created_at) VALUES ({pg_module.OBS_KEY}, 'someone',"
                         " 'core', false, 's1', 'p1', 1, 'Bash', 'again', 9) ON CONFLICT (obs_key) DO NOTHING",
                         {"key": key})
    assert sql(url, "SELECT count(*) FROM observations") == [(3,)]
    # and the store writes and replays through the same key form
    assert store.add_observation("s2", "p1", 1, "Bash", "a new step", key="k-new") > 0
    assert store.add_observation("s2", "p1", 1, "Bash", "a new step", key="k-new") == 0
    assert sql(url, "SELECT count(*) FROM observations WHERE session_id = 's2'") == [(1,)]
