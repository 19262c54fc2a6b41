"""The boundary's plan and its ways out, without a session: what a session's box hides, opens and closes, the bwrap
arguments' order, the Seatbelt profile for macOS (generated and checked here; never run: no macOS), the platform
decisions, and Orion's egress proxy (allow-list, local addresses, the user's own proxy)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from sidecar import boundary, box_net, sandbox
from sidecar.boundary import BoundaryError, BoxSettings


def session_layout(tmp_path: Path) -> tuple[Path, Path, dict[str, str], list[Path]]:
    """A user's home with credential stores, Orion's dirs, a scripted session's CLI home and a project."""
    home = tmp_path / "home"
    data = home / ".local" / "share" / "orion"
    settings_dir = home / ".config" / "orion"
    cli_home = data / "cli-home" / "s1"
    project = tmp_path / "work" / "project"
    for path in (cli_home / ".claude", settings_dir, home / ".ssh", home / ".aws", home / ".claude", project / ".claude",
                 project / ".git" / "hooks", data / "cli-home" / "other"):
        path.mkdir(parents=True)
    for path in (home / ".netrc", home / ".ssh" / "id_rsa", project / ".env", project / ".env.example",
                 project / ".git" / "config", home / ".claude.json"):
        path.write_text("x\n")
    env = {"HOME": str(cli_home), "CLAUDE_CONFIG_DIR": str(cli_home / ".claude"), "ANTHROPIC_BASE_URL": "http://127.0.0.1:4567"}
    return home, project, env, [data, settings_dir]


def test_a_scripted_session_hides_orion_the_user_and_other_sessions_and_writes_only_its_own(tmp_path: Path) -> None:
    home, project, env, orion = session_layout(tmp_path)
    plan = boundary.plan(project, env, orion_dirs=orion, home=home)
    real = lambda p: os.path.realpath(p)  # noqa: E731
    assert plan.writable == (real(project), real(env["HOME"]))
    for hidden in (orion[0], orion[1], home / ".ssh", home / ".aws", home / ".claude"):
        assert real(hidden) in plan.hidden_dirs, hidden
    assert {real(home / ".netrc"), real(home / ".claude.json")} <= set(plan.hidden_files)
    assert real(home / ".gnupg") not in plan.hidden_dirs  # absent: nothing to cover
    # Inside the project: what runs later outside any box, and the secrets file (not its template).
    for path in (".claude", ".git/hooks", ".git/config", ".env"):
        assert real(project / path) in plan.read_only, path
    assert real(project / ".env.example") not in plan.read_only
    assert plan.model_endpoint == ("127.0.0.1", 4567) and plan.allowed_hosts == ()
    why = plan.hidden_why
    assert "trust store" in why[real(orion[0])] and "SSH" in why[real(home / ".ssh")]


def test_a_real_model_session_keeps_its_transcripts_and_not_the_others(tmp_path: Path) -> None:
    home = tmp_path / "home"
    claude = home / ".claude"
    for path in (claude / "projects" / "-other-project", claude / "hooks", tmp_path / "p"):
        path.mkdir(parents=True)
    for name in ("settings.json", "statusline.sh", "history.jsonl", ".credentials.json"):
        (claude / name).write_text("{}")
    (home / ".claude.json").write_text("{}")
    project = tmp_path / "p"
    plan = boundary.plan(project, {"HOME": str(home)}, orion_dirs=[home / ".local/share/orion"], home=home)
    own = os.path.join(str(claude), "projects", re.sub(r"[^A-Za-z0-9]", "-", str(project)))
    assert str(claude) in plan.writable and own in plan.writable and own in plan.create_dirs
    assert str(home / ".claude.json") in plan.writable
    assert str(claude / "projects") in plan.hidden_dirs and str(claude / "history.jsonl") in plan.hidden_files
    for name in ("settings.json", "hooks", "statusline.sh"):
        assert str(claude / name) in plan.read_only, name
    assert str(claude / ".credentials.json") not in plan.read_only + plan.hidden_files  # the CLI refreshes its login
    assert plan.model_endpoint is None and "api.anthropic.com" in plan.allowed_hosts


def test_bwrap_arguments_place_every_parent_before_its_children(tmp_path: Path) -> None:
    home, project, env, orion = session_layout(tmp_path)
    plan = boundary.plan(project, env, orion_dirs=orion, home=home)
    args = plan.bwrap_args("/box/empty", "/box/net", "/box/net/model.sock")
    for flag in ("--die-with-parent", "--unshare-pid", "--as-pid-1", "--unshare-net", "--unshare-ipc", "--new-session"):
        assert flag in args
    assert args[args.index("--cap-drop") + 1] == "ALL"
    targets = [(args[i + 2] if args[i] in ("--bind", "--ro-bind") else args[i + 1], args[i])
               for i in range(len(args)) if args[i] in ("--bind", "--ro-bind", "--tmpfs")]
    order = [t for t, _ in targets]
    assert order.index(os.path.realpath(orion[0])) < order.index(os.path.realpath(env["HOME"]))
    assert order.index(os.path.realpath(project)) < order.index(os.path.realpath(project / ".claude"))
    assert ("/proc/sys", "--ro-bind") in targets  # uid 0 without capabilities could still write sysctls
    # The hiding comes after the project's read-only binds: bwrap follows symlinks, so a project entry swapped for a
    # link to ~/.ssh after the plan would bind the real one; the later tmpfs covers it again.
    hides = [i for i, (t, flag) in enumerate(targets) if flag == "--tmpfs" and t != "/tmp"]
    project_binds = [i for i, (t, _flag) in enumerate(targets) if t.startswith(os.path.realpath(project))]
    assert max(project_binds) < min(hides)
    assert args[args.index("ANTHROPIC_UNIX_SOCKET") + 1] == "/box/net/model.sock"
    assert args[args.index("--chdir") + 1] == os.path.realpath(project)


def test_the_seatbelt_profile_says_the_same_boundary(tmp_path: Path) -> None:
    """Generated and read here; sandbox-exec never ran it (docs/SECURITY.md says what is unverified)."""
    home, project, env, orion = session_layout(tmp_path)
    plan = boundary.plan(project, env, orion_dirs=orion, home=home)
    profile = plan.seatbelt_profile(proxy_port=50123)
    lines = profile.splitlines()
    assert lines[:2] == ["(version 1)", "(allow default)"]
    assert profile.count("(") == profile.count(")")
    rules = [line for line in lines if not line.startswith(";;")]
    deny_writes = rules.index("(deny file-write*)")
    allow_writes = next(i for i, line in enumerate(rules) if line.startswith("(allow file-write*"))
    hidden = next(i for i, line in enumerate(rules) if line.startswith("(deny file-read* file-write*"))
    reopen = next(i for i, line in enumerate(rules) if line.startswith("(allow file-read* file-write*"))
    assert deny_writes < allow_writes < hidden < reopen  # last match wins: the CLI home inside Orion's data reopens
    assert json.dumps(os.path.realpath(project)) in rules[allow_writes]
    assert json.dumps(os.path.realpath(home / ".ssh")) in rules[hidden]
    assert json.dumps(os.path.realpath(env["HOME"])) in rules[reopen]
    assert '(allow network-outbound (remote ip "localhost:4567"))' in rules
    assert '(allow network-outbound (remote ip "localhost:50123"))' in rules
    assert "(deny process-info* (target others))" in rules
    # A path with a quote or a backslash stays one SBPL string.
    odd = tmp_path / 'odd"dir\\x'
    odd.mkdir()
    assert json.dumps(os.path.realpath(odd)) in boundary.plan(odd, env, orion_dirs=orion, home=home).seatbelt_profile(1)


def test_the_users_settings_widen_only_what_they_say_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    home, project, env, orion = session_layout(tmp_path)
    extra = tmp_path / "shared-build"
    extra.mkdir()
    settings_file = tmp_path / "settings.json"
    settings_file.write_text(json.dumps({"sandbox": {"writablePaths": [str(extra)], "hiddenPaths": [str(project / "secrets")],
                                                     "network": {"allowedHosts": ["PyPI.org", "*.npmjs.org", "example.com:8443"]}}}))
    (project / "secrets").mkdir()
    settings = boundary.load_settings(settings_file)
    assert settings == BoxSettings(("pypi.org", "*.npmjs.org", "example.com:8443"), (str(extra),), (str(project / "secrets"),))
    plan = boundary.plan(project, env, orion_dirs=orion, home=home, settings=settings)
    assert os.path.realpath(extra) in plan.writable and os.path.realpath(project / "secrets") in plan.hidden_dirs
    for bad in ({"network": {"allowedHosts": ["http://x.org/"]}}, {"writablePaths": "/"}, {"hiddenPaths": [1]}):
        settings_file.write_text(json.dumps({"sandbox": bad}))
        with pytest.raises(BoundaryError, match=r"\$\.sandbox\."):
            boundary.load_settings(settings_file)
    with pytest.raises(sandbox.SandboxUnavailable, match="allowedHosts"):
        settings_file.write_text(json.dumps({"sandbox": {"network": {"allowedHosts": ["a b"]}}}))
        sandbox.decide("auto", os.environ.get("PATH"), (), project=project, cli_env=env, orion_dirs=orion,
                       user_settings=settings_file)


def test_platforms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, project, env, orion = session_layout(tmp_path)
    monkeypatch.setattr(sandbox, "platform_name", lambda: "windows")
    with pytest.raises(sandbox.SandboxUnavailable, match="no OS boundary on windows"):
        sandbox.decide("required", None, (), project=project, cli_env=env, orion_dirs=orion)
    status = sandbox.decide("auto", None, (), project=project, cli_env=env, orion_dirs=orion)
    assert status.enabled is False and "windows" in status.reason and status.boundary is None
    assert sandbox.cli_settings(status) == {"enabled": False}
    monkeypatch.setattr(sandbox, "platform_name", lambda: "macos")
    monkeypatch.setattr(sandbox.os, "access", lambda path, mode: path == sandbox.MACOS_SANDBOX_EXEC)
    status = sandbox.decide("auto", None, (), project=project, cli_env=env, orion_dirs=orion)
    assert status.enabled and status.boundary.platform == "macos" and status.boundary.launcher == "/usr/bin/sandbox-exec"
    assert sandbox.cli_settings(status) == {"enabled": False}  # the CLI's own per-command sandbox: off in the box
    assert sandbox.decide("off", None, (), project=project).boundary is None


# --------------------------------------------------------------------------- the egress proxy


def test_the_allow_list() -> None:
    policy = box_net.HostPolicy(("pypi.org", "*.npmjs.org", "example.com:8443", "127.0.0.1:9000"))
    assert policy.allows("pypi.org", 443) and policy.allows("PyPI.org.", 80)
    assert not policy.allows("pypi.org", 22) and not policy.allows("evil-pypi.org", 443)
    assert policy.allows("registry.npmjs.org", 443) and not policy.allows("npmjs.org", 443)
    assert not policy.allows("npmjs.org.evil.test", 443)
    assert policy.allows("example.com", 8443) and not policy.allows("example.com", 443)
    assert policy.literal("127.0.0.1") and not policy.literal("pypi.org")


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        body = b"hello-from-outside"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def http_server() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def proxy_exchange(socket_path: str, request: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(10)
        sock.connect(socket_path)
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
            if request.startswith(b"CONNECT") and b"\r\n\r\n" in b"".join(chunks):
                break
        return b"".join(chunks)


def relays_for(tmp_path: Path, hosts: tuple[str, ...], env: dict[str, str] | None = None) -> box_net.Relays:
    plan = boundary.BoxPlan(project=str(tmp_path), writable=(), read_only=(), hidden_dirs=(), hidden_files=(),
                            allowed_hosts=hosts)
    net = tmp_path / "net"
    net.mkdir()
    return box_net.open_relays(plan, unix_dir=str(net), env=env or {})


def test_the_proxy_lets_through_what_is_listed_and_nothing_else(tmp_path: Path) -> None:
    with http_server() as port:
        relays = relays_for(tmp_path, (f"127.0.0.1:{port}",))
        try:
            assert relays.proxy_socket and relays.model_socket is None
            ok = proxy_exchange(relays.proxy_socket, f"GET http://127.0.0.1:{port}/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            assert ok.startswith(b"HTTP/1.0 200") and ok.endswith(b"hello-from-outside")
            tunnel = proxy_exchange(relays.proxy_socket, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
            assert tunnel.startswith(b"HTTP/1.1 200")
            for request in (f"GET http://127.0.0.1:{port + 1}/ HTTP/1.1\r\n\r\n", "CONNECT example.org:443 HTTP/1.1\r\n\r\n",
                            "GET http://localhost:22/ HTTP/1.1\r\n\r\n"):
                refused = proxy_exchange(relays.proxy_socket, request.encode())
                assert refused.startswith(b"HTTP/1.1 403") and b"sandbox.network.allowedHosts" in refused, request
            assert relays.denied == [f"127.0.0.1:{port + 1}", "example.org:443", "localhost:22"]
        finally:
            relays.close()


def test_an_allowed_name_that_resolves_to_a_local_address_is_refused(tmp_path: Path) -> None:
    with http_server() as port:
        relays = relays_for(tmp_path, (f"localhost:{port}",))
        try:
            refused = proxy_exchange(relays.proxy_socket, f"GET http://localhost:{port}/ HTTP/1.1\r\n\r\n".encode())
            assert refused.startswith(b"HTTP/1.1 403") and b"local address" in refused
        finally:
            relays.close()


def test_the_users_own_proxy_carries_what_the_box_may_reach(tmp_path: Path) -> None:
    """A corporate proxy in the sidecar's environment: the box's allowed traffic goes through it, with its credentials."""
    seen: list[bytes] = []

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        seen.append(head)
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        await writer.drain()
        data = await reader.read(100)
        writer.write(b"echo:" + data)
        await writer.drain()
        writer.close()

    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(asyncio.start_server(upstream, "127.0.0.1", 0))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    port = server.sockets[0].getsockname()[1]
    try:
        relays = relays_for(tmp_path, ("pypi.org",), env={"HTTPS_PROXY": f"http://corp:s3cret@127.0.0.1:{port}"})
        try:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.settimeout(10)
                sock.connect(relays.proxy_socket)
                sock.sendall(b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n")
                assert sock.recv(100).startswith(b"HTTP/1.1 200")
                sock.sendall(b"ping")
                assert sock.recv(100) == b"echo:ping"
        finally:
            relays.close()
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
    assert seen and seen[0].startswith(b"CONNECT pypi.org:443 HTTP/1.1")
    assert b"Proxy-Authorization: Basic Y29ycDpzM2NyZXQ=" in seen[0]


def test_a_dead_sidecars_box_folders_are_swept_and_nothing_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `kill -9` leaves a box's folder (its sockets, its empty file) behind: the next sidecar's first box removes
    the folders whose sidecar is gone, never a live one's, a stranger's, or anything through a link."""
    import subprocess
    import sys

    from sidecar.reaper import start_of

    monkeypatch.setattr(boundary, "_box_base", lambda: str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    me = re.sub(r"[^0-9]", "", start_of(os.getpid()) or "0")
    stale = tmp_path / f"orion-box-{dead_pid}-123-abc"
    recycled = tmp_path / f"orion-box-{os.getpid()}-{me}9-abc"  # our pid, another start: a recycled pid
    live = tmp_path / f"orion-box-{os.getpid()}-{me}-abc"
    wide = tmp_path / f"orion-box-{dead_pid}-123-wide"
    target = tmp_path / "precious"
    for folder in (stale, recycled, live, wide, target):
        folder.mkdir(mode=0o700)
    wide.chmod(0o755)
    (stale / "net").mkdir()
    (target / "keep.txt").write_text("mine")
    (tmp_path / f"orion-box-{dead_pid}-123-link").symlink_to(target)
    monkeypatch.setattr(boundary, "_swept", threading.Event())
    boundary._sweep_once()
    assert not stale.exists() and not recycled.exists()
    assert live.is_dir() and wide.is_dir() and (target / "keep.txt").read_text() == "mine"
    assert (tmp_path / f"orion-box-{dead_pid}-123-link").is_symlink()
