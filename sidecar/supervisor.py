"""The sidecar's side of "nothing outlives the sidecar": its runtime record, the watchdog holding a pipe from it, the tracking of every child and CLI home, and the sweep of dead sidecars' leftovers at start-up.

The watchdog (sidecar/reaper.py) is started first, in its own session, with
the read end of a pipe whose write end only this process holds (descriptors
are not inherited across exec). When the sidecar ends in any way, `kill -9`
included, the kernel closes that end, the watchdog reads EOF and sweeps the
record: everything recorded, their process groups and descendants, whatever
carries this sidecar's token, and the CLI homes. This holds on Linux and
macOS alike (a pipe's EOF is POSIX); PR_SET_PDEATHSIG would cover only direct
children, only on Linux, and fires when the spawning *thread* ends. If the
watchdog itself is killed, it is started again; if both die, the next sidecar
sweeps the record at its start-up.

While it lives, the sidecar adopts every orphan below it (a child subreaper,
set up by hooks/executors/leftovers.py with the first hook runner): what a hook
leaves becomes its child, is recorded here through `hooks.children`, and dies
with its session. Each child this process spawns in its own session is named to
that module, so that it is never taken for an orphan and reaped behind its owner.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

from hooks import children
from sidecar import reaper
from hooks.launcher.frozen import helper_argv

log = logging.getLogger("sidecar.supervisor")

WATCHDOG = Path(reaper.__file__).resolve()
# Rewritten without dead children once past this size: a long session appends a line per hook run.
_COMPACT_AT = 256 * 1024


class Supervisor:
    """One per sidecar process; install with `start()`, which also makes `hooks.children` report here."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.run_dir = self.data_dir / reaper.RUN_DIR
        self.homes_dir = self.data_dir / reaper.HOMES_DIR
        self.token = os.urandom(16).hex()  # `secrets` would cost ~6 ms of start-up for the same call
        self.started_at = reaper.start_of(os.getpid()) or "0"
        self.record = self.run_dir / reaper.record_name(os.getpid(), self.started_at)
        self._lock = threading.Lock()  # tracking may come from worker threads (hook set loading, SDK start)
        self._fd = -1
        self._pipe_w = -1
        self.watchdog: subprocess.Popen[bytes] | None = None
        self._respawns = 0
        self._unvouched: list[tuple[int, str]] = []

    # ------------------------------------------------------------------ start / stop

    def start(self) -> None:
        """Write the record's header, put the token in our environment, start the watchdog, report children here."""
        self._fd = _open_private(self.run_dir, self.record)
        self._size = 0
        self._append({"sidecar": os.getpid(), "start": self.started_at, "token": self.token})
        # Inherited by every child (hooks, launchers, the CLI and its commands), across setsid and double forks.
        os.environ[reaper.TOKEN_VAR] = self.token
        self._spawn_watchdog()
        children.set_tracker(self.track)

    def _spawn_watchdog(self) -> None:
        read_end, self._pipe_w = os.pipe()  # both ends non-inheritable; only read_end is handed over, as stdin
        try:
            self.watchdog = subprocess.Popen(
                # -I: the watchdog imports nothing from the sidecar's tree, PYTHONPATH or the working directory.
                helper_argv("watchdog", WATCHDOG, "watch", str(self.record), isolated=True),
                # Not our stderr either: the frontend's pipe must reach EOF when we exit, not when the sweep ends.
                stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/",
                # Its own session: a frontend killing our process group must not take the cleaner with it.
                start_new_session=True,
            )
        finally:
            os.close(read_end)
        start = reaper.start_of(self.watchdog.pid)
        if start is not None:
            self._vouch(self.watchdog.pid, start)

    def ensure_watchdog(self) -> bool:
        """Start the watchdog again if it died while we live (someone killed it); False once we gave up."""
        proc = self.watchdog
        if proc is None or proc.poll() is None:
            return True
        if self._respawns >= 5:
            return False
        self._respawns += 1
        log.warning("watchdog %d exited (code %s); starting another", proc.pid, proc.returncode)
        os.close(self._pipe_w)
        self._spawn_watchdog()
        return True

    def stop(self) -> None:
        """Orderly end: stop reporting; the watchdog sees our pipe close at exit and sweeps what is left."""
        children.set_tracker(None)

    # ------------------------------------------------------------------ tracking

    def track(self, pid: int, own_group: bool = False) -> None:
        start = reaper.start_of(pid)
        if start is None:
            return  # already gone: whatever it started carries our token or sits in a recorded group
        if own_group:
            self._vouch(pid, start)
        self._append({"pid": pid, "start": start, "group": own_group})

    def _vouch(self, pid: int, start: str) -> None:
        # This process adopts the orphans below it (hooks/executors/leftovers.py makes it a child subreaper) and
        # reaps those that die; a child we spawned in its own session is none of them, so it is named there.
        # Passed on once that module is loaded (by the first hook runner): importing it here would cost start-up.
        leftovers = sys.modules.get("hooks.executors.leftovers")
        if leftovers is None:
            self._unvouched.append((pid, start))
            return
        for early in self._unvouched:
            leftovers.vouch(*early)
        self._unvouched.clear()
        leftovers.vouch(pid, start)

    def claim_home(self, home: Path) -> None:
        """Record a CLI home (only one directly under <data>/cli-home) so that it is removed when we die."""
        path = os.path.abspath(home)
        if os.path.dirname(path) != os.path.abspath(self.homes_dir):
            return
        self._append({"home": path})

    def _append(self, entry: dict[str, object]) -> None:
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        with self._lock:
            if self._fd < 0:
                return
            os.write(self._fd, line)  # one O_APPEND write: a kill leaves whole lines, at most one torn
            self._size += len(line)
            if self._size > _COMPACT_AT:
                self._compact()

    def _compact(self) -> None:
        record = reaper.read_record(self.record)
        if record is None:
            return
        lines = [{"sidecar": os.getpid(), "start": self.started_at, "token": self.token}]
        lines += [{"pid": p, "start": s, "group": g} for p, s, g in record.children if reaper.alive(p, s)]
        lines += [{"home": h} for h in record.homes if os.path.isdir(h)]
        data = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in lines).encode()
        os.ftruncate(self._fd, 0)
        os.write(self._fd, data)
        self._size = len(data)

    # ------------------------------------------------------------------ start-up sweep

    def sweep_dead(self) -> list[tuple[str, list[int], list[str]]]:
        """Sweep what dead sidecars left (blocking: run it in a worker thread)."""
        done = reaper.sweep_dead(self.data_dir)
        for name, killed, removed in done:
            log.info("swept dead sidecar record %s: killed %d process(es), removed %d CLI home(s)",
                     name, len(killed), len(removed))
        return done


def _open_private(run_dir: Path, record: Path) -> int:
    """<data>/run 0700 (parents too), the record 0600 from its creation; not hooks.private_files: its imports
    (tempfile, shutil) would cost start-up time here, before the first request is read."""
    missing = []
    probe = run_dir
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    st = os.stat(run_dir)
    if stat.S_IMODE(st.st_mode) & 0o077 and st.st_uid == os.geteuid():
        os.chmod(run_dir, 0o700)
    return os.open(record, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)


_current: Supervisor | None = None


def install(data_dir: Path) -> Supervisor:
    """Start this process's supervisor (once); `python -m sidecar` calls it before serving."""
    global _current
    if _current is None:
        _current = Supervisor(data_dir)
        _current.start()
    return _current


def current() -> Supervisor | None:
    return _current


def track(pid: int | None, *, own_group: bool = False) -> None:
    """Report a child started outside the hook engine (the CLI, an evaluator's CLI); no-op without a supervisor."""
    if pid is not None and _current is not None:
        _current.track(pid, own_group)


def claim_home(home: str | Path | None) -> None:
    if home and _current is not None:
        _current.claim_home(Path(home))


def child_env() -> dict[str, str]:
    """What a child started with an explicit environment must carry (the token); {} without a supervisor."""
    return {reaper.TOKEN_VAR: _current.token} if _current is not None else {}
