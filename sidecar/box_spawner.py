"""The first process of a session's hook box (sidecar/hook_box.py): it starts the session's boxed hooks inside the box,
on the sidecar's word, and is the box's init (it reaps whatever they leave).

Run as `python -S box_spawner.py FD` inside bubblewrap, where FD is one end of a SOCK_SEQPACKET socket pair whose
other end only the sidecar holds (inherited, never a path: nothing else in or out of the box can connect to it).
Messages are JSON, one per packet:

  sidecar -> box  {"op": "run", "id": N, "argv": [...], "env": {...}, "cwd": "..."}  with three descriptors
                  attached (SCM_RIGHTS): the hook's stdin, stdout and stderr
                  {"op": "signal", "id": N, "sig": S, "marker": "NAME=VALUE"}  to the hook's process group, and
                  to every process whose environment holds the marker (all the hook started)
  box -> sidecar  {"id": N, "pid": P}                    started (P is the pid inside the box)
                  {"id": N, "error": "..."}              not started (the reason)
                  {"id": N, "status": C}                 exited: its code, or -S for a signal

When the sidecar's end closes (the session ended, the sidecar died), everything in the box is killed and the
spawner exits, and the box with it. Standard library only: it runs before anything else is importable.
"""

import array
import collections
import json
import os
import selectors
import signal
import socket
import sys

_MAX = 1 << 20


# Replies the socket had no room for, oldest first: sent as soon as it has (a burst of hooks starting and ending at
# once outruns a busy sidecar's reads; a reply dropped there left its hook waiting for a start it never heard of).
_unsent: collections.deque = collections.deque()
# Outside a PID namespace of our own only (see _end): the hooks we started, each the leader of its group.
_started: set = set()


def _send(sock: socket.socket, message: dict) -> None:
    _unsent.append(json.dumps(message).encode())
    _flush(sock)


def _flush(sock: socket.socket) -> None:
    while _unsent:
        try:
            sock.send(_unsent[0])
        except BlockingIOError:
            return  # the loop waits for room (EVENT_WRITE) and comes back
        except OSError:
            _unsent.clear()  # the sidecar is gone: the next read sees it
            return
        _unsent.popleft()


# Signals a hook starts with at their default action: Python ignores SIGPIPE and SIGXFSZ, SIGQUIT may come ignored
# from far above, and an ignored signal stays so across exec; SIGCHLD, SIGHUP, SIGINT and SIGTERM are caught here, so
# exec resets them anyway.
_DEFAULTED = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGQUIT, signal.SIGCHLD)


def _start(message: dict, fds: list) -> int:
    """The hook's program in a session of its own, the three descriptors as 0, 1, 2, in its working directory: by
    posix_spawn (the child shares our memory until its exec, where a fork copies our page tables and then faults
    on every page it touches: ~0.9 ms against ~1.6 ms for a small program, each hook), and when that cannot start it,
    by fork + exec, which reports why on the hook's own stderr and exits 127, as it always did."""
    argv, env, cwd = message["argv"], message["env"], message["cwd"]
    try:
        os.chdir(cwd)  # one hook at a time: the child starts where we stand
        program = _which(argv[0], env.get("PATH", os.defpath))
        actions = [(os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(fds)]
        return os.posix_spawn(program, argv, env, file_actions=actions, setsid=True, setsigdef=_DEFAULTED)
    except OSError:
        return _fork_exec(argv, env, cwd, fds)


def _which(name: str, path: str) -> str:
    """Where execvpe would find `name`: as given when it holds a slash, else the first executable file of that name
    in the hook's own PATH (an empty entry is the working directory)."""
    if "/" in name:
        return name
    for folder in path.split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(name)


def _fork_exec(argv: list, env: dict, cwd: str, fds: list) -> int:
    pid = os.fork()
    if pid == 0:  # the child: only async-signal-safe calls until exec
        try:
            os.setsid()
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            os.closerange(3, 65536)
            for sig in _DEFAULTED:
                signal.signal(sig, signal.SIG_DFL)
            os.chdir(cwd)
            os.execvpe(argv[0], argv, env)
        except BaseException as exc:  # noqa: BLE001 - report and leave, whatever it was
            try:
                os.write(2, f"could not start {argv[0]} (cwd {cwd}): {exc}\n".encode())
            finally:
                os._exit(127)
    return pid


def main(fd: int) -> int:
    # A hook gets its three descriptors and nothing of ours: everything we hold is close-on-exec (Python opens so;
    # our end of the socket pair came inherited, the hook's descriptors come with MSG_CMSG_CLOEXEC), and whatever
    # else the box handed us is closed now.
    os.closerange(3, fd)
    os.closerange(fd + 1, 65536)
    os.set_inheritable(fd, False)
    sock = socket.socket(fileno=fd)
    sock.setblocking(False)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, lambda *_: None)  # only the sidecar's end closing ends the box
    running: dict[int, int] = {}  # pid -> id
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    while True:
        selector.modify(sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if _unsent else 0))
        for key, events in selector.select():
            if key.fileobj is sock and events & selectors.EVENT_WRITE:
                _flush(sock)
            if key.fileobj is sock and not events & selectors.EVENT_READ:
                continue
            if key.fileobj is sock:
                try:
                    data, ancdata, _flags, _addr = sock.recvmsg(_MAX, socket.CMSG_SPACE(3 * 4),
                                                                socket.MSG_CMSG_CLOEXEC)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    return _end()
                fds: list = []
                for level, kind, payload in ancdata:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        got = array.array("i")
                        got.frombytes(payload[: len(payload) - (len(payload) % got.itemsize)])
                        fds.extend(got)
                _handle(sock, json.loads(data), fds, running)
            else:
                try:
                    while os.read(wake_r, 512):
                        pass
                except BlockingIOError:
                    pass
                _reap(sock, running)


def _handle(sock: socket.socket, message: dict, fds: list, running: dict) -> None:
    ident = message.get("id")
    if message.get("op") == "run":
        try:
            if len(fds) != 3:
                raise ValueError(f"a run needs 3 descriptors, got {len(fds)}")
            pid = _start(message, fds)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            _send(sock, {"id": ident, "error": str(exc)})
        else:
            running[pid] = ident
            if os.getpid() != 1:
                _started.add(pid)
            _send(sock, {"id": ident, "pid": pid})
        finally:
            for fd in fds:
                os.close(fd)
    elif message.get("op") == "signal":
        sig = int(message.get("sig", signal.SIGKILL))
        for pid, which in running.items():
            if which == ident:
                try:
                    os.killpg(pid, sig)
                except OSError:
                    pass
        marker = message.get("marker")
        if isinstance(marker, str) and marker:
            _signal_marked(marker.encode(), sig)
    else:
        for fd in fds:
            os.close(fd)


def _signal_marked(marker: bytes, sig: int) -> None:
    """Every process in the box whose environment holds `marker` (NAME=VALUE, the hook run's own): what the hook
    started, in its group or not (a `setsid` daemon too), as Claude Code kills a timed-out hook's whole tree."""
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            try:
                os.kill(int(name), sig)
            except OSError:
                pass


def _reap(sock: socket.socket, running: dict) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        ident = running.pop(pid, None)
        _started.discard(pid)
        if ident is not None:  # a hook; anything else was something a hook left, now reaped
            code = os.waitstatus_to_exitcode(status)
            _send(sock, {"id": ident, "status": code})


def _end() -> int:
    # pid 1 of the box's PID namespace (bubblewrap's --as-pid-1): kill(-1) reaches every other process in it. Run
    # anywhere else (by mistake: a test, a hand), kill(-1) would reach every process the user may signal, so then
    # only what we started goes, by its process group.
    try:
        if os.getpid() == 1:
            os.kill(-1, signal.SIGKILL)
        else:
            for pid in _started:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
