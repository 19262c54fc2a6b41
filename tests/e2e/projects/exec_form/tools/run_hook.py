"""An exec-form hook runner as plugins ship them: `python run_hook.py <handler> [args...]`, one script, many handlers.

Every start appends its argv to .e2e/argv.jsonl (so a test sees exactly what it was given); the handler
`pretool/bash/dangerous-command-blocker` refuses force pushes and hard resets with exit 2.
"""

import json
import os
import re
import sys
from pathlib import Path


def main() -> int:
    payload = json.loads(sys.stdin.read() or "{}")
    log = Path(os.environ["CLAUDE_PROJECT_DIR"]) / ".e2e" / "argv.jsonl"
    log.parent.mkdir(exist_ok=True)
    with log.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"argv": sys.argv[1:], "event": payload.get("hook_event_name")}) + "\n")
    handler = sys.argv[1] if len(sys.argv) > 1 else ""
    command = (payload.get("tool_input") or {}).get("command", "")
    if handler == "pretool/bash/dangerous-command-blocker":
        if re.search(r"\bgit\s+push\b.*(--force\b|\s-f\b)", command) or re.search(r"\bgit\s+reset\s+--hard\b", command):
            sys.stderr.write("Blocked: force pushes and hard resets rewrite history. Ask the user first.\n")
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
