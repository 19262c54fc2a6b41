"""Kills what a dead sidecar left running and removes its CLI homes, from the runtime record it kept; run as the sidecar's watchdog (`python reaper.py watch <record>`) and by the next sidecar's start-up sweep.

Standard library only (psutil when installed, for start times off Linux): the
watchdog is a separate small interpreter that must start fast and must not
import the sidecar.

A runtime record is `<data>/run/<sidecar pid>-<start>.jsonl`, 0600 in a 0700
directory, one JSON object per line:

    {"sidecar": pid, "start": "...", "token": "..."}     the header, written at creation
    {"pid": n, "start": "...", "group": true}            a child, and whether it leads its own process group
    {"home": "/abs/<data>/cli-home/<session>"}            a CLI home directory, claimed before it is created

`start` is the process's start time as the OS reports it (clock ticks since
boot on Linux), so a pid recycled by an unrelated process never matches.
What one sweep kills, all at once (SIGSTOP first so nothing forks away, then
SIGKILL): every recorded child still alive with its recorded start; every
member of a recorded group whose leader is that child; every descendant of
those; and (Linux, macOS through `ps -E`) every process of ours whose
environment carries `ORION_SIDECAR_RUN=<token>` - the sidecar puts it in its
own environment, so hooks' double-forked daemons and the CLI's commands carry
it too.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import time
from pathlib import Path

TOKEN_VAR = "ORION_SIDECAR_RUN"
RUN_DIR = "run"
HOMES_DIR = "cli-home"
_LINUX = sys.platform.startswith("linux")
_STOP_ROUNDS = 8  # a process may fork while we freeze its tree: look again until a round finds nothing new
_DEATH_WAIT_S = 2.0


# --------------------------------------------------------------------------- identities


def start_of(pid: int) -> str | None:
    """The process's start time as an opaque string, or None when it is gone (or cannot be read)."""
    if _LINUX:
        # os-level calls: a file object adds fstat/ioctl/lseek, and this runs once per hook spawn.
        try:
            fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            fields = os.read(fd, 4096).rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            return None
        finally:
            os.close(fd)
        return fields[19].decode() if len(fields) > 19 else None
    try:
        import psutil  # type: ignore[import-untyped]
    except ImportError:
        return None
    try:
        return f"{psutil.Process(pid).create_time():.3f}"
    except Exception:  # noqa: BLE001 - gone, or not ours to read
        return None


def record_name(pid: int, start: str) -> str:
    return f"{pid}-{start}.jsonl"


def owner_of(record: Path) -> tuple[int, str] | None:
    """(pid, start) of the sidecar a record file belongs to, from its name."""
    pid, dash, start = record.name.removesuffix(".jsonl").partition("-")
    if not dash or not pid.isdigit() or not start or not record.name.endswith(".jsonl"):
        return None
    return int(pid), start


def alive(pid: int, start: str) -> bool:
    return start_of(pid) == start


# --------------------------------------------------------------------------- records


class Record:
    # Plain classes, not dataclasses: building a dataclass costs about a millisecond of the sidecar's start-up.
    __slots__ = ("path", "sidecar", "start", "token", "children", "homes")

    def __init__(self, path: Path, sidecar: int = 0, start: str = "") -> None:
        self.path = path
        self.sidecar = sidecar
        self.start = start
        self.token = ""
        self.children: list[tuple[int, str, bool]] = []  # (pid, start, leads its own group)
        self.homes: list[str] = []


def read_record(path: Path) -> Record | None:
    owner = owner_of(path)
    if owner is None:
        return None
    record = Record(path, *owner)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line torn by the kill: the others still count
        if not isinstance(entry, dict):
            continue
        if "token" in entry and isinstance(entry["token"], str):
            record.token = entry["token"]
        elif isinstance(entry.get("pid"), int) and isinstance(entry.get("start"), str):
            record.children.append((entry["pid"], entry["start"], bool(entry.get("group"))))
        elif isinstance(entry.get("home"), str):
            record.homes.append(entry["home"])
    return record


# --------------------------------------------------------------------------- the process table


class Proc:
    __slots__ = ("pid", "ppid", "pgid", "start", "carries")

    def __init__(self, pid: int, ppid: int, pgid: int, start: str, carries: bool) -> None:
        self.pid, self.ppid, self.pgid, self.start = pid, ppid, pgid, start
        self.carries = carries  # its environment holds the token


def _table_linux(needle: bytes | None) -> dict[int, Proc]:
    me = os.getuid()
    table: dict[int, Proc] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            if os.stat(f"/proc/{pid}").st_uid != me:
                continue  # never another user's process, whatever it claims to carry
            with open(f"/proc/{pid}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            if fields[0] in (b"Z", b"X"):
                continue  # already dead; holds nothing but its pid
            carries = False
            if needle is not None:
                with open(f"/proc/{pid}/environ", "rb") as fh:
                    carries = needle in b"\0" + fh.read() + b"\0"
        except (OSError, IndexError):
            continue
        table[pid] = Proc(pid, int(fields[2]), int(fields[3]), fields[19].decode(), carries)
    return table


def _table_ps(needle: bytes | None) -> dict[int, Proc]:
    # macOS and other BSDs: ps shows the tree, and with -E the environment of our own processes.
    import subprocess

    table: dict[int, Proc] = {}
    try:
        out = subprocess.run(["ps", "-axww", "-o", "pid=,ppid=,pgid=,uid="], capture_output=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return table
    me = os.getuid()
    for line in out.decode(errors="replace").splitlines():
        parts = line.split()
        if len(parts) != 4 or not all(p.lstrip("-").isdigit() for p in parts) or int(parts[3]) != me:
            continue
        pid = int(parts[0])
        table[pid] = Proc(pid, int(parts[1]), int(parts[2]), start_of(pid) or "", False)
    if needle is not None:
        try:
            env_out = subprocess.run(["ps", "-Eaxww", "-o", "pid=,command="], capture_output=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            env_out = b""
        text_needle = needle.strip(b"\0")
        for line in env_out.splitlines():
            head, _, rest = line.strip().partition(b" ")
            if head.isdigit() and int(head) in table and (b" " + text_needle) in rest:
                table[int(head)].carries = True
    return table


def process_table(token: str | None) -> dict[int, Proc]:
    needle = f"\0{TOKEN_VAR}={token}\0".encode() if token else None
    return _table_linux(needle) if _LINUX else _table_ps(needle)


# --------------------------------------------------------------------------- the sweep


def _victims(record: Record, table: dict[int, Proc], spare: set[int]) -> set[int]:
    found: set[int] = set()
    groups: set[int] = set()
    for pid, start, group in record.children:
        proc = table.get(pid)
        if proc is None or proc.start != start:
            continue  # gone, or the pid now names someone else
        found.add(pid)
        if group and proc.pgid == pid:
            groups.add(pid)
    for proc in table.values():
        if proc.carries or proc.pgid in groups:
            found.add(proc.pid)
    children: dict[int, list[int]] = {}
    for proc in table.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    stack = list(found)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found - spare


def kill_all(record: Record) -> list[int]:
    """Freeze, then kill, everything the record's sidecar started that is still running; returns the pids killed."""
    spare = {os.getpid(), os.getppid(), 1}
    stopped: dict[int, str] = {}
    for _ in range(_STOP_ROUNDS):
        table = process_table(record.token)
        fresh = {pid for pid in _victims(record, table, spare) if pid not in stopped}
        if not fresh:
            break
        for pid in fresh:
            # Signalling what we just read: a pid recycled in between would have to reach the same start tick.
            if start_of(pid) == table[pid].start:
                _signal(pid, signal.SIGSTOP)
                stopped[pid] = table[pid].start
        # The tree of a stopped process cannot change any more; the next round picks up what was forked meanwhile.
    for pid, start in stopped.items():
        if start_of(pid) == start:
            _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + _DEATH_WAIT_S
    pending = dict(stopped)
    while pending and time.monotonic() < deadline:
        pending = {pid: s for pid, s in pending.items() if _running(pid, s)}
        if pending:
            time.sleep(0.01)
    return sorted(stopped)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _running(pid: int, start: str) -> bool:
    if start_of(pid) != start:
        return False
    if _LINUX:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                return fh.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
        except (OSError, IndexError):
            return False
    return True


def remove_homes(record: Record, data_dir: Path) -> list[str]:
    """Remove the record's CLI homes; only directories directly inside <data>/cli-home are ever touched."""
    import shutil

    removed = []
    homes_root = os.path.realpath(data_dir / HOMES_DIR)
    for home in record.homes:
        path = os.path.abspath(home)
        if os.path.dirname(path) != homes_root:
            continue  # a record is data: it never names what may be deleted outside Orion's own homes
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def sweep_record(record: Record, data_dir: Path) -> tuple[list[int], list[str]]:
    """Kill, remove the homes, then drop the record: the record goes last, so an interrupted sweep is redone."""
    killed = kill_all(record)
    removed = remove_homes(record, data_dir)
    try:
        record.path.unlink()
    except FileNotFoundError:
        pass
    return killed, removed


def sweep_dead(data_dir: Path) -> list[tuple[str, list[int], list[str]]]:
    """At start-up: sweep the record of every sidecar that is no longer running; live sidecars' records are left alone."""
    run_dir = data_dir / RUN_DIR
    try:
        paths = sorted(run_dir.glob("*.jsonl"))
    except OSError:
        return []
    dead, live_tokens = [], set()
    for path in paths:
        owner = owner_of(path)
        if owner is None:
            continue
        record = read_record(path)
        if record is None:
            continue
        if alive(*owner):
            live_tokens.add(record.token)
        else:
            dead.append(record)
    done = []
    for record in dead:
        if record.token and record.token in live_tokens:
            record.token = ""  # a copied token must never reach a live sidecar's processes
        killed, removed = sweep_record(record, data_dir)
        done.append((record.path.name, killed, removed))
    return done


# --------------------------------------------------------------------------- the watchdog


def watch(record_path: Path) -> int:
    """Block until the sidecar's end of our stdin closes (it died or exited), then sweep its record."""
    while True:
        try:
            if not os.read(0, 4096):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    record = read_record(record_path)
    if record is None:
        return 0
    killed, removed = sweep_record(record, record_path.parent.parent)
    if killed or removed:
        try:
            sys.stderr.write(f"orion watchdog: sidecar {record.sidecar} gone; killed {len(killed)} process(es), "
                             f"removed {len(removed)} CLI home(s)\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass  # the frontend closed our stderr with the sidecar's: nobody to tell
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "watch":
        sys.exit(watch(Path(sys.argv[2])))
    sys.stderr.write("usage: reaper.py watch <record>\n")
    sys.exit(2)
