"""Broken hook behaviours for the fault-injection suite: `python faults.py MODE MARKER` as a command hook, or `act(MODE, MARKER)` from a python hook.

Stdlib only. MARKER is put on the command line of every process this starts,
so the tests can look for anything left behind.
"""

import os
import resource
import signal
import subprocess
import sys
import time

HUGE_BYTES = 50 * 1024 * 1024
MEMORY_CAP_BYTES = 600 * 1024 * 1024  # address-space ulimit set by the hook on itself
MEMORY_GOAL_BYTES = 400 * 1024 * 1024  # stop eating here even if the cap allows more
LONG_S = 60.0


def _spawn(mode, marker, *, detach=False, keep_pipes=False):
    quiet = None if keep_pipes else subprocess.DEVNULL
    return subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), mode, marker],
        stdin=subprocess.DEVNULL, stdout=quiet, stderr=quiet, start_new_session=detach,
    )


def _ignore_term_and_sleep():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(LONG_S)


def _eat():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_BYTES, MEMORY_CAP_BYTES))
    hoard, total = [], 0
    try:
        while total < MEMORY_GOAL_BYTES:
            hoard.append(b"x" * (25 * 1024 * 1024))  # filled, so the pages are really resident
            total += 25 * 1024 * 1024
    except MemoryError:
        pass
    print(f"holding {total >> 20} MiB", file=sys.stderr, flush=True)
    time.sleep(LONG_S)


def act(mode, marker, python_hook=False):
    """Do the broken thing; returns what a python hook's run() returns when the mode ends normally."""
    if mode == "hang":
        time.sleep(LONG_S)
    elif mode == "sleep":
        time.sleep(LONG_S)
    elif mode == "ignore_term":
        _ignore_term_and_sleep()
    elif mode == "hang_with_stubborn_child":
        _spawn("ignore_term", marker)
        if not python_hook:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(LONG_S)
    elif mode == "crash":
        raise RuntimeError(f"hook crashed on purpose ({marker})")
    elif mode == "hard_exit":
        os._exit(3)
    elif mode == "signal":
        os.kill(os.getpid(), signal.SIGKILL)
    elif mode == "invalid_json":
        print('{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": ')
    elif mode == "huge_json":
        if python_hook:
            return {"systemMessage": "x" * HUGE_BYTES}
        out = sys.stdout.buffer
        out.write(b'{"systemMessage": "')
        chunk = b"x" * (1024 * 1024)
        for _ in range(HUGE_BYTES // len(chunk)):
            out.write(chunk)
        out.write(b'"}\n')
        out.flush()
    elif mode == "binary":
        data = bytes(range(256)) * 64 + b"\x00\xff\xfe garbage \x00"
        if python_hook:
            print(data.decode("latin-1"))
        else:
            sys.stdout.buffer.write(b"\x00" + data)
            sys.stdout.flush()
    elif mode == "close_stdin":
        os.close(0)
        print("{}")
    elif mode == "delete_self":
        os.unlink(os.path.abspath(__file__))
        print("{}")
    elif mode == "daemon":
        _spawn("sleep", marker, detach=True)
        print("{}")
    elif mode == "daemon_keeps_pipes":
        _spawn("sleep", marker, detach=True, keep_pipes=True)
        print("{}")
    elif mode == "eat_memory":
        _eat()
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    return None


if __name__ == "__main__":
    act(sys.argv[1], sys.argv[2])
