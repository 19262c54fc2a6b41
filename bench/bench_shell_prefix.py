"""What Orion's shell prefix costs a command (sidecar/shell_isolation.py), side by side with the two ways it replaces.

Each Bash command the CLI runs is `<shell> -c <line>`; with the prefix it is `<shell> -c "'<prefix>' '<line>'"`, one
more `/bin/sh` start and one more exec of the shell. Timed here as the CLI spawns them, with the environment a boxed
CLI has (its variables plus env-isolation's names), interleaved in rounds so a change of load hits all three:

- `bare`: the command as Claude Code runs it (nothing isolated);
- `rewrite`: env-isolation's old way, `unset …; <command>` (the CLI then asked about every command);
- `prefix`: the command through `sidecar/shell_prefix.sh`;
- `wrapper`: a user's own `CLAUDE_CODE_SHELL_PREFIX` (a minimal `exec "$SHELL" -c "$1"` script), as Claude Code runs it;
- `chained`: that wrapper after Orion's prefix (`ORION_SHELL_NEXT`), as Orion runs it.

Usage: .venv/bin/python bench/bench_shell_prefix.py [--rounds 5] [--per-round 200]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hooks.builtin.env_isolation import isolate_command, names_to_unset  # noqa: E402
from sidecar.shell_isolation import PREFIX_SCRIPT, cli_shell, flag_env  # noqa: E402

LINE = "echo hi > /dev/null"


def environment() -> tuple[dict[str, str], list[str]]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TERM", "USER", "SHELL")}
    env.update({"ANTHROPIC_BASE_URL": "http://127.0.0.1:1", "ANTHROPIC_API_KEY": "placeholder",
                "CLAUDE_CONFIG_DIR": "/tmp/x", "CLAUDE_CODE_ENTRYPOINT": "sdk-py", "CLAUDECODE": "1"})
    names = names_to_unset(env)
    return env, names


def timed(argv: list[str], env: dict[str, str], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True)
        out.append((time.perf_counter() - start) * 1000)
    return out


WRAPPER = '#!/bin/sh\nexec /bin/sh -c "$1"\n'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--per-round", type=int, default=200)
    args = parser.parse_args()
    env, names = environment()
    shell = cli_shell(env) or "/bin/bash"
    prefixed_env = {**env, **flag_env(str(PREFIX_SCRIPT), shell, names)}
    wrapper = Path(tempfile.mkdtemp(prefix="bench-prefix-")) / "user-wrapper"
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o700)
    chained_env = {**env, **flag_env(str(PREFIX_SCRIPT), shell, names, str(wrapper))}
    prefix_line = f"{shlex.quote(str(PREFIX_SCRIPT))} {shlex.quote(LINE)}"
    ways = {
        "bare": ([shell, "-c", LINE], env),
        "rewrite": ([shell, "-c", isolate_command(LINE, names)], env),
        "prefix": ([shell, "-c", prefix_line], prefixed_env),
        "wrapper": ([shell, "-c", f"{shlex.quote(str(wrapper))} {shlex.quote(LINE)}"], env),
        "chained": ([shell, "-c", prefix_line], chained_env),
    }
    samples: dict[str, list[float]] = {way: [] for way in ways}
    for _ in range(args.rounds):
        for way, (argv, way_env) in ways.items():
            samples[way] += timed(argv, way_env, args.per_round)
    load = os.getloadavg()
    print(f"shell {shell}; {args.rounds} rounds x {args.per_round} commands per way; load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    bare = statistics.median(samples["bare"])
    for way, values in samples.items():
        q = statistics.quantiles(values, n=20)
        med = statistics.median(values)
        print(f"{way:8s} median {med:6.2f} ms  p95 {q[18]:6.2f} ms  (+{med - bare:5.2f} ms over bare)")


if __name__ == "__main__":
    main()
