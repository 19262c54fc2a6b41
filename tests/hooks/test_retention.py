"""`python -m hooks prune` and the retention policy: old sessions' data goes, oldest first under the size cap; an
open session's never does; a symlink is removed as a link; only the user's own settings choose the policy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from hooks.pruning import SessionLease
from hooks.retention import DAY_S, MIB, RetentionPolicy, load_policy, policy_from

ROOT = Path(__file__).resolve().parents[2]


def data_dir() -> Path:
    return Path(os.environ["ORION_DATA_DIR"])


def user_settings(value: dict) -> None:
    path = Path(os.environ["ORION_USER_SETTINGS"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))


def age(path: Path, days: float) -> None:
    """Every entry under `path` (and `path`) last modified `days` ago; links themselves, never their targets."""
    stamp = time.time() - days * DAY_S
    entries = [path]
    if path.is_dir() and not path.is_symlink():
        entries += list(path.rglob("*"))
    for entry in sorted(entries, key=lambda p: len(p.parts), reverse=True):
        os.utime(entry, (stamp, stamp), follow_symlinks=False)


def session(sid: str, *, days: float, size: int = 100, scripted: bool = True) -> list[Path]:
    """What a session leaves: its tracking folder and, for a scripted one, its CLI home and archived transcript."""
    data = data_dir()
    made = [data / "sessions" / sid]
    (data / "sessions" / sid).mkdir(parents=True)
    (data / "sessions" / sid / "events.jsonl").write_bytes(b"x" * size)
    if scripted:
        (data / "cli-home" / sid / "projects").mkdir(parents=True)
        (data / "cli-home" / sid / "projects" / "t.jsonl").write_text("{}\n")
        (data / "transcripts").mkdir(exist_ok=True)
        (data / "transcripts" / f"{sid}.jsonl").write_text("{}\n")
        made += [data / "cli-home" / sid, data / "transcripts" / f"{sid}.jsonl"]
    for path in made:
        age(path, days)
    return made


def prune_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "hooks", "prune", *args], capture_output=True, text=True, env=env,
                          timeout=60, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done


def test_the_default_policy_removes_what_sessions_left_a_month_ago_and_a_dry_run_only_says_so() -> None:
    old = session("old-session", days=40, size=3 * MIB)
    recent = session("recent-session", days=2)

    dry = prune_cli("--dry-run")
    assert "would remove old-session  3.0" in dry.stdout and "(age)" in dry.stdout
    assert "recent-session" not in dry.stdout
    assert "would remove 1 session(s)" in dry.stdout and "max age 30 days, size cap 512 MiB" in dry.stdout
    assert all(p.exists() for p in old + recent)

    done = json.loads(prune_cli("--json").stdout)
    assert [(r["sessionId"], r["reason"]) for r in done["removed"]] == [("old-session", "age")]
    assert done["removedBytes"] > 3 * MIB and done["kept"] == 1
    assert not any(p.exists() for p in old)
    assert all(p.exists() for p in recent)


def test_over_the_size_cap_the_least_recently_used_go_first() -> None:
    user_settings({"retention": {"maxTotalMiB": 1}})
    for n, days in enumerate([5, 4, 3, 2, 1]):
        session(f"s{days}", days=days, size=400_000, scripted=False)
    done = json.loads(prune_cli("--json").stdout)
    # 5 x ~0.39 MiB: the three oldest go, the two most recently used fit under 1 MiB.
    assert [(r["sessionId"], r["reason"]) for r in done["removed"]] == [("s5", "size cap"), ("s4", "size cap"),
                                                                         ("s3", "size cap")]
    assert sorted(p.name for p in (data_dir() / "sessions").iterdir()) == ["s1", "s2"]
    assert done["keptBytes"] <= MIB


def test_an_open_sessions_data_is_kept_until_its_sidecar_lets_go() -> None:
    session("open-session", days=45)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path; from hooks.pruning import SessionLease;"
         "SessionLease.hold(Path(sys.argv[1]), 'open-session'); print('held', flush=True); sys.stdin.read()",
         str(data_dir())],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        age(data_dir() / "sessions" / "open-session", 45)  # the lease file too: only the lock keeps it
        kept = prune_cli()
        assert "kept open-session: due, but open in a sidecar" in kept.stdout
        assert (data_dir() / "sessions" / "open-session" / "events.jsonl").exists()
        assert (data_dir() / "cli-home" / "open-session").exists()
    finally:
        holder.kill()  # a sidecar killed holds nothing: the kernel drops its lock
        holder.wait()
    assert "removed open-session" in prune_cli().stdout
    assert not (data_dir() / "sessions" / "open-session").exists()


def test_a_lease_released_at_a_sessions_end_counts_as_its_last_use() -> None:
    session("ended-now", days=45, scripted=False)
    SessionLease.hold(data_dir(), "ended-now").release()
    assert "ended-now" not in prune_cli().stdout
    assert (data_dir() / "sessions" / "ended-now" / "events.jsonl").exists()


def test_symlinks_in_the_data_directory_are_removed_as_links_and_what_they_point_to_survives(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "precious").mkdir(parents=True)
    (outside / "precious" / "thesis.tex").write_text("years of work")
    (outside / "notes.txt").write_text("keep me")
    data = data_dir()
    (data / "sessions").mkdir(parents=True)
    (data / "cli-home").mkdir()
    # A link where a session's folder would be, links inside an old session's folder, a link for its CLI home.
    (data / "sessions" / "planted").symlink_to(outside / "precious", target_is_directory=True)
    (data / "sessions" / "old-one").mkdir()
    (data / "sessions" / "old-one" / "events.jsonl").symlink_to(outside / "notes.txt")
    (data / "sessions" / "old-one" / "deeper").symlink_to(outside / "precious", target_is_directory=True)
    (data / "cli-home" / "old-one").symlink_to(outside, target_is_directory=True)
    for path in (data / "sessions" / "planted", data / "sessions" / "old-one", data / "cli-home" / "old-one"):
        age(path, 60)
    age(outside, 60)  # the targets are old too: only a followed link could make them due

    removed = json.loads(prune_cli("--json").stdout)["removed"]
    assert sorted(r["sessionId"] for r in removed) == ["old-one", "planted"]
    assert {r["sessionId"]: r["bytes"] for r in removed}["planted"] < 1000  # the link's size, not the folder's
    assert not os.path.lexists(data / "sessions" / "planted")
    assert not os.path.lexists(data / "sessions" / "old-one")
    assert not os.path.lexists(data / "cli-home" / "old-one")
    assert (outside / "precious" / "thesis.tex").read_text() == "years of work"
    assert (outside / "notes.txt").read_text() == "keep me"


def test_a_symlink_in_place_of_the_sessions_folder_is_left_alone(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "old-looking").mkdir(parents=True)
    (outside / "old-looking" / "events.jsonl").write_text("not Orion's")
    age(outside, 90)
    data_dir().mkdir(parents=True)
    (data_dir() / "sessions").symlink_to(outside, target_is_directory=True)
    done = json.loads(prune_cli("--json").stdout)
    assert done["removed"] == []
    assert (outside / "old-looking" / "events.jsonl").read_text() == "not Orion's"


def test_a_projects_settings_cannot_change_retention(tmp_path: Path) -> None:
    project = tmp_path / "cloned"
    (project / ".claude").mkdir(parents=True)
    hostile = {"retention": {"maxAgeDays": 0.00001, "maxTotalMiB": 0.00001, "rotateMiB": 0.00001},
               "env": {"ORION_USER_SETTINGS": str(project / ".claude" / "settings.json")}}
    for name in ("settings.json", "settings.local.json"):
        (project / ".claude" / name).write_text(json.dumps(hostile))
    (project / ".orion").mkdir()
    (project / ".orion" / "settings.json").write_text(json.dumps(hostile))  # as a vault's
    session("yesterday", days=1)
    done = json.loads(prune_cli("--json", cwd=project).stdout)
    assert done["removed"] == [] and done["policy"] == RetentionPolicy().describe()
    assert (data_dir() / "sessions" / "yesterday" / "events.jsonl").exists()


def test_the_users_settings_set_each_limit_and_zero_removes_one() -> None:
    user_settings({"retention": {"maxAgeDays": 7, "maxTotalMiB": 0, "rotateMiB": 1.5}})
    assert load_policy() == RetentionPolicy(max_age_s=7 * DAY_S, max_total_bytes=None, rotate_bytes=int(1.5 * MIB))
    policy, problems = policy_from({"maxAgeDays": -1, "maxTotalMiB": "lots", "rotateMiB": True, "keep": 3})
    assert policy == RetentionPolicy()
    assert len(problems) == 4 and all("retention." in p for p in problems)
    user_settings({"retention": {"maxAgeDays": 0, "maxTotalMiB": 0}})
    session("ancient", days=3650)
    assert "removed 0 session(s)" in prune_cli().stdout
