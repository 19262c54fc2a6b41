"""README's "Using it" commands, run as written from the repository root: they leave nothing in the repository."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DEMO_PROJECT = ROOT / "frontend_stub" / "demo_project"


def using_it_lines(*starts: str) -> list[str]:
    """The lines of README's "Using it" block that begin with one of `starts`, in the page's order."""
    text = README.read_text(encoding="utf-8")
    block = text.split("## Using it", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.startswith(starts)]


def tree(root: Path) -> set[str]:
    return {str(path.relative_to(root)) for path in root.rglob("*")}


def test_the_chat_example_leaves_the_demo_project_in_the_repository_untouched(tmp_path: Path) -> None:
    script = using_it_lines("demo=", ".venv/bin/orion chat")
    assert len(script) == 2, script
    before = tree(DEMO_PROJECT)
    env = {**os.environ, "TMPDIR": str(tmp_path), "ORION_DATA_DIR": str(tmp_path / "data"),
           "ORION_USER_SETTINGS": str(tmp_path / "user-settings.json"),
           "ORION_CLAUDE_USER_SETTINGS": str(tmp_path / "claude-user-settings.json")}
    # The page's .venv/bin/orion is this interpreter's orion wherever the tests run.
    script = [line.replace(".venv/bin/orion", f"{sys.executable} -m frontend_stub") for line in script]
    done = subprocess.run(["bash", "-euc", "\n".join(script)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    assert tree(DEMO_PROJECT) == before
    # The session ran in the copy: the project's audit hook wrote its log there.
    assert [log.relative_to(tmp_path).parts[-2:] for log in tmp_path.rglob("bash.log")] == [(".audit", "bash.log")]
