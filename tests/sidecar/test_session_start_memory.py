"""Which memory files a session's start announces (InstructionsLoaded, load_reason session_start), as Claude Code
loads them: by setting source, the user's first, then from the root down to the project."""

from __future__ import annotations

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
