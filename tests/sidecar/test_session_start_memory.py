"""Which memory files a session's start announces (InstructionsLoaded, load_reason session_start), as Claude Code
loads them: by setting source, the user's first, then from the root down to the project."""

from __future__ import annotations

import os
from pathlib import Path

from sidecar.sessions import session_start_memory


def test_the_files_follow_the_sources_and_claude_codes_order(tmp_path: Path) -> None:
    config, parent = tmp_path / "config", tmp_path / "work"
    project = parent / "app"
    (project / ".claude").mkdir(parents=True)
    config.mkdir()
    for path in (config / "CLAUDE.md", parent / "CLAUDE.md", project / "CLAUDE.md", project / ".claude" / "CLAUDE.md",
                 project / "CLAUDE.local.md"):
        path.write_text("rules\n")
    everything = session_start_memory(project, ["user", "project", "local"], config)
    assert everything == [(config / "CLAUDE.md", "User"), (parent / "CLAUDE.md", "Project"),
                          (project / "CLAUDE.md", "Project"), (project / ".claude" / "CLAUDE.md", "Project"),
                          (project / "CLAUDE.local.md", "Local")]
    # An untrusted project's files are withheld from the CLI (settingSources): none is announced either.
    assert session_start_memory(project, ["user"], config) == [(config / "CLAUDE.md", "User")]
    assert session_start_memory(project, ["project"], None) == everything[1:4]


def test_rules_folders_give_their_unconditional_rules_last(tmp_path: Path) -> None:
    config, project = tmp_path / "config", tmp_path / "app"
    rules, user_rules = project / ".claude" / "rules", config / "rules"
    for folder in (rules / "b", rules / "z" / "deep", user_rules):
        folder.mkdir(parents=True)
    (project / "CLAUDE.md").write_text("rules\n")
    for path in (rules / "style.md", rules / "a-first.md", rules / "b" / "testing.md", rules / "z" / "deep" / "docs.md",
                 user_rules / "mine.md"):
        path.write_text("Be brief.\n")
    (rules / "notes.txt").write_text("not a rule\n")
    # a rule for some paths loads when a matching file is read (the CLI fires that itself), not at the start
    (rules / "api.md").write_text('---\npaths:\n  - "src/api/**"\n---\nAPI handlers return JSON.\n')
    (rules / "titled.md").write_text("---\ndescription: no paths here\n---\nAlways.\n")
    os.mkfifo(rules / "pipe.md")  # a FIFO named like a rule: never opened (it would block)
    (rules / "loop").symlink_to(tmp_path)  # a folder link: not walked into
    got = session_start_memory(project, ["user", "project"], config)
    assert got == [(user_rules / "mine.md", "User"), (project / "CLAUDE.md", "Project"),
                   (rules / "a-first.md", "Project"), (rules / "b" / "testing.md", "Project"),
                   (rules / "style.md", "Project"), (rules / "titled.md", "Project"),
                   (rules / "z" / "deep" / "docs.md", "Project")]
    assert session_start_memory(project, ["user"], config) == [(user_rules / "mine.md", "User")]
