"""A stdio proxy that records an ACP connection: `python wire_tap.py LOGFILE -- AGENT ARGV...`.

A third-party client launches this as "the agent". It starts the real agent, passes every byte both ways unchanged,
and appends each line it passed to LOGFILE as one JSON object: `{"tap": <this process's pid>, "dir": "client" (the
client sent it) or "agent", "line": <the line, newline stripped>}`. Several taps may append to one file (a client
that launches the agent once per command): `tap` tells their connections apart. Standard library only, so it starts
as fast as the interpreter does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from typing import BinaryIO


class WireLog:
    """LOGFILE, opened for appending; one `write` per record, so records of concurrent taps never interleave."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._lock = threading.Lock()
        self._tap = os.getpid()

    def record(self, direction: str, line: bytes) -> None:
        text = line.rstrip(b"\n").rstrip(b"\r").decode("utf-8", errors="replace")
        entry = json.dumps({"tap": self._tap, "dir": direction, "line": text}, ensure_ascii=False) + "\n"
        with self._lock:
            os.write(self._fd, entry.encode("utf-8"))


def pump(source: BinaryIO, sink: BinaryIO, direction: str, log: WireLog) -> None:
    """Copy `source` to `sink` line by line, recording each line; close `sink` at the end of `source`."""
    try:
        while line := source.readline():
            if line.strip():
                log.record(direction, line)
            sink.write(line)
            sink.flush()
    except (BrokenPipeError, ValueError, OSError):
        pass  # the other side is gone: nothing left to pass on
    finally:
        try:
            sink.close()
        except OSError:
            pass


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: wire_tap.py LOGFILE -- AGENT [ARGS...]", file=sys.stderr)
        return 2
    log = WireLog(argv[0])
    agent = subprocess.Popen(argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert agent.stdin is not None and agent.stdout is not None
    # A client that stops its agent with a signal stops the real one: it gets the same signal and its own shutdown.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda number, frame: agent.send_signal(number))
    to_agent = threading.Thread(target=pump, args=(sys.stdin.buffer, agent.stdin, "client", log), daemon=True)
    to_client = threading.Thread(target=pump, args=(agent.stdout, sys.stdout.buffer, "agent", log), daemon=True)
    to_agent.start()
    to_client.start()
    code = agent.wait()
    to_client.join(timeout=10)  # what the agent wrote before it exited still reaches the client
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))  # the stdin reader may still be blocked on a client that keeps its end open
