"""docs/WRITING_HOOKS.md, executed: its ```<lang> file=PATH``` blocks are written into a fresh project, its ```sh run```
blocks run there in order, and each ```text output``` block after a run must match what that run printed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "WRITING_HOOKS.md"
FENCE = re.compile(r"^```([A-Za-z]+)([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
GAP = "…"


@dataclass
class Block:
    lang: str
    attrs: dict[str, str]
    body: str
    line: int


def blocks(text: str) -> list[Block]:
    found = []
    for match in FENCE.finditer(text):
        attrs: dict[str, str] = {}
        for word in match.group(2).split():
            key, _, value = word.partition("=")
            attrs[key] = value
        found.append(Block(match.group(1), attrs, match.group(3), text.count("\n", 0, match.start()) + 1))
    return found


def line_matches(expected: str, actual: str) -> bool:
    """`…` inside an expected line stands for any text; the pieces must appear in order."""
    position = 0
    for piece in expected.strip().split(GAP):
        found = actual.find(piece, position)
        if found < 0:
            return False
        position = found + len(piece)
    return True


def check_output(expected: str, actual: str, where: str) -> None:
    """Every expected line (a lone `…` skips any number of lines) matches an actual line, in order."""
    lines = actual.splitlines()
    cursor = 0
    for want in expected.splitlines():
        if want.strip() == GAP or not want.strip():
            continue
        while cursor < len(lines) and not line_matches(want, lines[cursor]):
            cursor += 1
        assert cursor < len(lines), f"{where}: expected a line matching {want!r} in order; the run printed:\n{actual}"
        cursor += 1


def test_the_page_runs_as_shown(tmp_path: Path) -> None:
    project = (tmp_path / "demo").resolve()
    project.mkdir()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(ROOT)}
    page = blocks(PAGE.read_text(encoding="utf-8"))
    ran, checked, files = 0, 0, 0
    last_output: str | None = None
    for block in page:
        where = f"{PAGE.name}:{block.line}"
        if "file" in block.attrs:
            target = project / block.attrs["file"]
            target.parent.mkdir(parents=True, exist_ok=True)
            # Written as a user's editor writes it (no execute bit): the page must say chmod +x where it matters.
            target.write_text(block.body)
            files += 1
        elif "run" in block.attrs:
            done = subprocess.run(["bash", "-e", "-c", block.body], cwd=project, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, timeout=120)
            last_output = done.stdout
            assert done.returncode == 0, f"{where}: exit {done.returncode}\n{last_output}"
            ran += 1
        elif "output" in block.attrs:
            assert last_output is not None, f"{where}: an output block with no run before it"
            check_output(block.body, last_output, where)
            last_output = None
            checked += 1
    # The page must keep being a runnable walk-through, not lose its markers.
    assert files >= 4 and ran >= 7 and checked >= 7, (files, ran, checked)
