"""Helpers for attacking the session's OS boundary: folders outside the project that the box can see (the host's /tmp
is not one: the box has its own), generated probe scenarios, and the tool outputs of a turn."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# Outside the project, and visible (read-only) inside the box: /var/tmp is part of the read-only root.
VISIBLE_BASE = "/var/tmp"


@contextmanager
def visible_outside(name: str = "orion-outside-") -> Iterator[Path]:
    """A folder outside the project that the box sees read-only, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix=name, dir=VISIBLE_BASE))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def probe_scenario(path: Path, probes: dict[str, dict[str, Any]]) -> str:
    """Write a scripted scenario where the prompt `probe <name>` makes the agent call one tool (`{tool: input}`),
    and return its `scripted:` model name. Every probe's output should contain `probe-done` or an error for the
    closing rule to answer (a tool error is a tool result too)."""
    rules = [{"name": name, "when": {"last_user_contains": f"probe {name}"},
              "reply": [{"tool_use": {"name": tool, "input": tool_input}}]}
             for name, call in probes.items() for tool, tool_input in call.items()]
    rules.append({"name": "done", "when": {"last_tool_result_matches": "."}, "reply": "probed"})
    path.write_text(json.dumps({"description": "boundary probes", "rules": rules, "default": "probed"}))
    return f"scripted:{path}"
