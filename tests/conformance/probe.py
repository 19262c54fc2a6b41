"""The hook every conformance case runs: records what it was given, then behaves as its case says.

Invoked as `python3 <project>/.claude/hooks/probe.py <tag>`. It appends one JSON
line to `probe.log.jsonl` beside itself: the tag, the parsed stdin, the
environment variables Claude Code documents for hooks, and the working
directory. Then it looks its tag up in `behaviours.json` beside itself and
sleeps, prints stdout/stderr (with `first_only`, only on its first call) (or, with `echo_argv`, its own arguments as
additional context), appends `export` lines to `$CLAUDE_ENV_FILE`, and exits
as told. Standard library only: it runs under both the CLI and the
sidecar.
"""

import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENV_KEYS = ("CLAUDECODE", "CLAUDE_PROJECT_DIR", "CLAUDE_CODE_SESSION_ID", "CLAUDE_ENV_FILE", "CLAUDE_EFFORT",
            "CLAUDE_CODE_ENTRYPOINT", "CONFORMANCE_SETTINGS_VAR", "CONFORMANCE_SECRET_TOKEN", "CONFORMANCE_WRAPPED")


def main() -> int:
    tag = sys.argv[1] if len(sys.argv) > 1 else "untagged"
    raw = sys.stdin.read()
    try:
        stdin = json.loads(raw)
    except ValueError:
        stdin = {"unparsed": raw}
    record = {"tag": tag, "stdin": stdin, "cwd": os.getcwd(),
              "env": {k: os.environ[k] for k in ENV_KEYS if k in os.environ}}
    with open(HERE / "probe.log.jsonl", "a", encoding="utf-8") as log:
        log.write(json.dumps(record) + "\n")
    behaviours = json.loads((HERE / "behaviours.json").read_text())
    how = behaviours.get(tag, {})
    if how.get("unless_stop_hook_active") and isinstance(stdin, dict) and stdin.get("stop_hook_active"):
        how = {}  # what a well-written Stop hook does: block once, then let the agent stop
    if how.get("first_only"):
        # the same for an event whose input has no stop_hook_active (TeammateIdle): only the tag's first call
        lines = (HERE / "probe.log.jsonl").read_text(encoding="utf-8").splitlines()
        if sum(json.loads(line).get("tag") == tag for line in lines if line.strip()) > 1:
            how = {}
    if how.get("sleep"):
        time.sleep(how["sleep"])
    if how.get("wait_for"):
        # A file of the project the harness writes once the first prompt has answered: the hook answers after the
        # turn on a loaded machine as on an idle one.
        release = HERE.parent.parent / how["wait_for"]
        for _ in range(600):
            if release.exists():
                break
            time.sleep(0.1)
    if how.get("env_file") and os.environ.get("CLAUDE_ENV_FILE"):
        with open(os.environ["CLAUDE_ENV_FILE"], "a", encoding="utf-8") as fh:
            fh.write(how["env_file"])
    if how.get("echo_argv") and isinstance(stdin, dict):
        # What the hook was started with, word by word: exec-form `args` arrive untouched by any shell.
        words = " | ".join(sys.argv[2:])
        how = {**how, "stdout": {"hookSpecificOutput": {"hookEventName": stdin.get("hook_event_name"),
                                                        "additionalContext": f"argv: {words}"}}}
    if "stdout" in how:
        out = how["stdout"]
        out = out if isinstance(out, str) else json.dumps(out)
        # "<PROJECT>" in an answer stands for the project's path (a watchPaths entry, say)
        sys.stdout.write(out.replace("<PROJECT>", os.environ.get("CLAUDE_PROJECT_DIR", "<PROJECT>")))
    if "stderr" in how:
        sys.stderr.write(how["stderr"])
    sys.stdout.flush()
    sys.stderr.flush()
    if how.get("answered"):
        (HERE / how["answered"]).write_text("answered\n")  # a tool that waits for this hook's answer may go on
    if how.get("signal"):
        os.kill(os.getpid(), how["signal"])
    return int(how.get("exit", 0))


if __name__ == "__main__":
    sys.exit(main())
