"""A prepared CLI is taken over only if nothing it read at its start changed since (sidecar/standby.py): an edit
that is undone afterwards, content, size, mtime and inode put back as they were, still counts as a change."""

from __future__ import annotations

import os
from pathlib import Path

from sidecar.standby import files_fingerprint


def test_a_settings_file_swapped_and_restored_changes_the_fingerprint(tmp_path: Path) -> None:
    project = tmp_path / "project"
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"permissions": {"allow": []}}\n')
    before = files_fingerprint(project, [])
    assert files_fingerprint(project, []) == before  # stable while nothing changes
    original = settings.read_bytes()
    stat = settings.stat()
    # The swap, while the prepared CLI reads it: same size, written in place (same inode)...
    with open(settings, "r+b") as fh:
        fh.write(b'{"permissions": {"allow": ["*"]}}'[: len(original)].ljust(len(original)))
    # ...and the restore: the bytes, then the times, exactly as they were.
    with open(settings, "r+b") as fh:
        fh.write(original)
    os.utime(settings, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    after = settings.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns, settings.read_bytes()) == \
        (stat.st_ino, stat.st_size, stat.st_mtime_ns, original)
    assert files_fingerprint(project, []) != before


def test_a_new_file_in_a_watched_folder_changes_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".claude" / "agents").mkdir(parents=True)
    before = files_fingerprint(project, [])
    (project / ".claude" / "agents" / "x.md").write_text("---\nname: x\n---\n")
    assert files_fingerprint(project, []) != before
