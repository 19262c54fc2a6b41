"""`orion inspect` in a real headless Chromium (Debian's, driven by Playwright): a scripted session with a denied
`.env` write, a rewritten command and a slow hook shows the right rows, the deny reason and the durations; a
permission is answered from the page; the ended session is shown again from its tracking file; the server wants
its token and its own Host."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "frontend_stub" / "demo_project"
CHROMIUM = os.environ.get("ORION_CHROMIUM", "/usr/bin/chromium")

pytestmark = [pytest.mark.cli, pytest.mark.slow, pytest.mark.timeout(300)]


def start_inspect(args: list[str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "frontend_stub", "inspect", *args], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            start_new_session=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:") and "token=" in url, (url, proc.stderr.read() if proc.poll() is not None else "")
    return proc, url


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(5)


@pytest.fixture
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} missing: scripts/bootstrap.sh installs Debian's chromium"
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    target = tmp_path / "demo-project"
    shutil.copytree(DEMO, target)
    settings = json.loads((target / ".claude" / "settings.json").read_text())
    settings["hooks"]["PreToolUse"][0]["hooks"].append(
        {"type": "command", "name": "slow-check", "command": "sleep 1", "timeout": 10})
    # A project hook that asks before every command: the question shows on the page (the demo's `ls -la` is a
    # read-only command, which the CLI itself runs without one).
    ask = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                                  "permissionDecisionReason": "This project asks before every command."}}
    settings["hooks"]["PreToolUse"][0]["hooks"].append(
        {"type": "command", "name": "ask-first", "command": f"echo '{json.dumps(ask)}'", "timeout": 10})
    (target / ".claude" / "settings.json").write_text(json.dumps(settings))
    return target


def hook_row(page, name: str, nth: int = 0):  # type: ignore[no-untyped-def]
    return page.locator(f"[data-testid=hook][data-hook={name!r}]").nth(nth)


def test_a_live_session_in_the_page_then_the_same_session_recorded(browser, project: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    proc, url = start_inspect(["--project", str(project), "--scenario", "demo", "--prompt", "Tidy up the project", "--trust"])
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        page.wait_for_selector("body[data-ready='1']")
        # The project's ask-first hook asks about the listing: the question shows on the page and is answered there.
        card = page.wait_for_selector("[data-testid=permission]", timeout=60_000)
        assert "ls -la" in card.inner_text()
        card.query_selector("button[data-option='allow_once']").click()
        page.wait_for_selector("[data-testid=result][data-stop='end_turn']", timeout=60_000)

        # The guard's deny, with its reason, under the Write it stopped.
        protection = page.locator("[data-testid=tool] [data-testid=hook][data-hook='protection'][data-decision='deny']")
        assert protection.count() == 1
        assert protection.get_attribute("data-outcome") == "blocked"
        reason = protection.locator("[data-testid=reason]").inner_text()
        assert ".env" in reason and "protection" in reason
        # The rewrite: the project's plain-output hook gave the agent's `ls -la` plain output.
        rewrite = page.locator("[data-hook='plain-output'][data-decision='rewrite'] [data-testid=rewrite]").inner_text()
        assert "ls -la --color=never" in rewrite
        # The slow hook: its duration, and a longer bar on the shared axis than the fast audit hook beside it.
        slow = hook_row(page, "slow-check")
        assert slow.get_attribute("data-outcome") == "success"
        slow_ms = float(slow.locator("[data-testid=duration]").inner_text().split(" ms")[0])
        assert slow_ms >= 1000, slow_ms
        audit = hook_row(page, "audit-bash")
        audit_ms = float(audit.locator("[data-testid=duration]").inner_text().split(" ms")[0])
        widths = [row.locator("[data-testid=bar]").bounding_box()["width"] for row in (slow, audit)]
        # The bars follow the durations the page shows, whatever the machine's load made them: a loaded machine can
        # slow the audit hook to a few hundred ms (a short bar is held at its minimum width, hence "at least").
        assert widths[0] > 0.8 * min(slow_ms / max(audit_ms, 0.1), 5) * widths[1], (widths, slow_ms, audit_ms)
        # Notifications ride along as rows of their own.
        # The session's sandbox shows as a row of its own (notifications, project and summary changes likewise:
        # test_context_events_render_as_rows).
        assert "enabled" in page.locator("[data-testid=info][data-kind='sandbox']").inner_text()

        # Filters: only the blocked hooks stay visible.
        page.select_option("[data-testid=filter-outcome]", "blocked")
        visible = page.locator("[data-testid=hook]:not(.hidden)")
        assert visible.count() >= 1
        assert set(visible.evaluate_all("rows => rows.map(r => r.dataset.outcome)")) == {"blocked"}
        page.select_option("[data-testid=filter-outcome]", "")
        page.fill("[data-testid=filter-hook]", "slow")
        assert page.locator("[data-testid=hook]:not(.hidden)").evaluate_all("rows => rows.map(r => r.dataset.hook)") == ["slow-check"]
        page.fill("[data-testid=filter-hook]", "")

        artefacts = Path(os.environ.get("ORION_TEST_ARTEFACTS", tmp_path))
        artefacts.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(artefacts / "inspector-live.png"), full_page=True)
        assert (artefacts / "inspector-live.png").stat().st_size > 10_000

        session_id = page.locator("#title").inner_text().split("session ")[1].split(" ")[0]
        page.click("[data-testid=end-session]")
        page.wait_for_selector("[data-testid=status]:has-text('(ended)')", timeout=30_000)
    finally:
        stop(proc)

    # Looking back: the same hooks, from the session's tracking file, no sidecar running.
    proc, url = start_inspect(["--session", session_id])
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        page.wait_for_selector("body[data-ready='1']")
        assert "recorded session" in page.locator("#title").inner_text()
        assert hook_row(page, "protection").get_attribute("data-outcome") in ("blocked", "success")
        assert page.locator("[data-testid=hook][data-hook='protection'][data-outcome='blocked']").count() == 1
        slow = hook_row(page, "slow-check")
        assert float(slow.locator("[data-testid=duration]").inner_text().split(" ms")[0]) >= 1000
        names = set(page.locator("[data-testid=hook]").evaluate_all("rows => rows.map(r => r.dataset.hook)"))
        assert {"protection", "env-isolation", "plain-output", "audit-bash", "slow-check"} <= names, names
        page.screenshot(path=str(artefacts / "inspector-recorded.png"), full_page=True)
    finally:
        stop(proc)


def test_the_server_wants_its_token_and_its_own_host(tmp_path: Path) -> None:
    (tmp_path / "sessions" / "s-1").mkdir(parents=True)
    (tmp_path / "sessions" / "s-1" / "events.jsonl").write_text(json.dumps({
        "ts": "2026-11-25T00:00:01.000Z", "sessionId": "s-1", "executionId": "e-1", "hookId": "h", "name": "gate",
        "type": "command", "source": "project", "event": "PreToolUse", "outcome": "success", "durationMs": 5.0,
        "exitCode": 0, "error": None, "background": False, "enforced": True}) + "\n")
    env_data = os.environ.get("ORION_DATA_DIR")
    os.environ["ORION_DATA_DIR"] = str(tmp_path)
    try:
        proc, url = start_inspect(["--session", "s-1"])
    finally:
        if env_data is None:
            os.environ.pop("ORION_DATA_DIR")
        else:
            os.environ["ORION_DATA_DIR"] = env_data
    base, token = url.split("/?token=")

    def status(path: str, *, method: str = "GET", headers: dict[str, str] | None = None, body: bytes | None = None) -> int:
        request = urllib.request.Request(base + path, method=method, headers=headers or {}, data=body)
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status
        except urllib.error.HTTPError as exc:
            return exc.code

    try:
        deadline = time.monotonic() + 20
        while status(f"/state?token={token}") != 200:
            assert time.monotonic() < deadline, "the inspector never answered"
            time.sleep(0.2)
        assert status("/") == 403
        assert status("/state") == 403
        wrong = token[:-1] + ("y" if token.endswith("x") else "x")  # one character off, never the token itself
        assert status(f"/state?token={wrong}") == 403
        assert status(f"/?token={token}", headers={"Host": "evil.example:80"}) == 403
        # What the page posts must carry the token in a header (a cross-origin form cannot).
        assert status("/end", method="POST", body=b"{}", headers={"Content-Type": "application/json"}) == 403
        assert status(f"/end?token={token}", method="POST", body=b"{}", headers={"Content-Type": "application/json"}) == 403
        assert status("/end", method="POST", body=b"{}", headers={"Content-Type": "application/json", "X-Orion-Token": token}) == 200
        with urllib.request.urlopen(f"{base}/state?token={token}", timeout=10) as answer:
            state = json.loads(answer.read())
            assert answer.headers["Cache-Control"] == "no-store" and answer.headers["Referrer-Policy"] == "no-referrer"
        assert [e["data"]["hookName"] for e in state["events"] if e["kind"] == "hook_response"] == ["gate"]
    finally:
        stop(proc)


@contextlib.contextmanager
def synthetic_inspector() -> Iterator[tuple[Any, asyncio.AbstractEventLoop]]:
    """The real inspector server on a feed this test fills (no session): (inspector, its loop), served in a thread
    until the block ends. Add events with `loop.call_soon_threadsafe(inspector.feed.add, kind, data)`."""
    from frontend_stub.inspector.feed import Feed
    from frontend_stub.inspector.server import Inspector

    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, Any] = {}

    def serve() -> None:
        asyncio.set_event_loop(loop)
        holder["inspector"] = inspector = Inspector(Feed("synthetic"))
        task = holder["task"] = loop.create_task(inspector.serve())
        ready.set()
        try:
            loop.run_until_complete(task)
        except asyncio.CancelledError:
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        yield holder["inspector"], loop
    finally:
        loop.call_soon_threadsafe(holder["task"].cancel)
        thread.join(10)


def test_context_events_render_as_rows(browser) -> None:  # type: ignore[no-untyped-def]
    """projectContextChange, contextSummaryUpdated and notification, shaped as the sidecar sends them (ipc models),
    through the real server and page."""
    from ipc import protocol as p

    events = [
        ("projectContextChange", p.ProjectContextChangeEvent(session_id="s", project=p.ProjectRef(name="atlas", path="/v/atlas"),
                                                             reason="autodetect: named in the prompt")),
        ("contextSummaryUpdated", p.ContextSummaryUpdatedEvent(session_id="s", summary="Tidied; .env left alone.", trigger="auto")),
        ("notification", p.NotificationEvent(session_id="s", message="Claude needs your permission to use Bash",
                                             notification_type="permission_prompt")),
    ]
    with synthetic_inspector() as (inspector, loop):
        page = browser.new_page()
        page.goto(inspector.url)
        page.wait_for_selector("body[data-ready='1']")
        for kind, model in events:  # live: after the page subscribed
            loop.call_soon_threadsafe(inspector.feed.add, kind, model.wire())
        page.wait_for_selector("[data-testid=info][data-kind='notification']", timeout=10_000)
        rows = {row["kind"]: row["text"] for row in page.locator("[data-testid=info]").evaluate_all(
            "rows => rows.map(r => ({kind: r.dataset.kind, text: r.textContent}))")}
    assert "atlas" in rows["project"] and "autodetect" in rows["project"]
    assert "Tidied" in rows["summary"] and "auto" in rows["summary"]
    assert "permission to use Bash" in rows["notification"]


def test_a_turn_shows_what_the_agent_said_and_did_in_the_order_it_happened(browser) -> None:  # type: ignore[no-untyped-def]
    """Text, a tool call, more text: three rows in that order (issue 25: the page joined the texts into one
    paragraph above the tool calls)."""
    updates = [{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Looking first."}},
               {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "ls -la", "status": "pending"},
               {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"},
               {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Then "}},
               {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done."}}]
    with synthetic_inspector() as (inspector, loop):
        page = browser.new_page()
        page.goto(inspector.url)
        page.wait_for_selector("body[data-ready='1']")
        loop.call_soon_threadsafe(inspector.feed.add, "prompt", {"text": "look around"})
        for update in updates:
            loop.call_soon_threadsafe(inspector.feed.add, "update", update)
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-testid=answer]')].some(a => a.textContent === 'Then done.')",
            timeout=10_000)
        rows = page.locator("[data-testid=turn] > [data-testid]").evaluate_all(
            "rows => rows.map(r => [r.dataset.testid, r.dataset.testid === 'tool' ? r.dataset.tool : r.textContent])")
    assert rows == [["prompt", "▶ look around"], ["answer", "Looking first."], ["tool", "t1"], ["answer", "Then done."]]


def test_open_hands_the_browser_no_token_and_the_page_still_opens(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`inspect --open`: a browser's command line is readable by every local user (/proc/<pid>/cmdline), so the
    browser is given a private file (0600) that leads it to the page; the token is in no program's arguments, the
    real Chromium lands on the page with it, and the file is gone once the page has loaded."""
    (tmp_path / "sessions" / "s-2").mkdir(parents=True)
    (tmp_path / "sessions" / "s-2" / "events.jsonl").write_text(json.dumps({
        "ts": "2026-11-25T00:00:01.000Z", "sessionId": "s-2", "executionId": "e-1", "hookId": "h", "name": "gate",
        "type": "command", "source": "project", "event": "PreToolUse", "outcome": "success", "durationMs": 5.0,
        "exitCode": 0, "error": None, "background": False, "enforced": True}) + "\n")
    argv_log = tmp_path / "browser-argv.json"
    recorder = tmp_path / "browser.py"
    recorder.write_text(f"import json, sys\nopen({str(argv_log)!r}, 'w').write(json.dumps(sys.argv))\n")
    saved = {name: os.environ.get(name) for name in ("ORION_DATA_DIR", "BROWSER")}
    os.environ["ORION_DATA_DIR"] = str(tmp_path)
    os.environ["BROWSER"] = f"{sys.executable} {recorder} %s"
    try:
        proc, url = start_inspect(["--session", "s-2", "--open"])
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    try:
        deadline = time.monotonic() + 20
        while not argv_log.exists():
            assert time.monotonic() < deadline and proc.poll() is None, "the browser was never started"
            time.sleep(0.1)
        argv = json.loads(argv_log.read_text())
        token = url.split("token=")[1]
        assert all(token not in word for word in argv), argv
        opener = Path(argv[-1].removeprefix("file://"))
        assert opener.is_file() and opener.stat().st_mode & 0o777 == 0o600
        assert opener.parent.stat().st_mode & 0o777 == 0o700
        page = browser.new_page()  # type: ignore[attr-defined]
        page.goto(opener.as_uri())
        page.wait_for_url(url, timeout=20000)
        page.wait_for_selector("text=gate", timeout=20000)
        deadline = time.monotonic() + 20
        while opener.exists():
            assert time.monotonic() < deadline, "the opener file outlived the page load"
            time.sleep(0.1)
    finally:
        stop(proc)


def test_the_permission_card_shows_the_whole_command_it_approves(browser, project: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The card's title is one shortened line; what runs is the whole input. A command whose tail lies past the
    title's 200 characters, and on a second line, shows whole and as written on the card that approves it."""
    padding = "x" * 260
    command = f"echo start-{padding} > start.txt\necho HIDDEN-TAIL-RUNS-TOO > tail.txt"
    scenario = tmp_path / "long.json"
    scenario.write_text(json.dumps({"turns": [[{"tool_use": {"name": "Bash", "input": {
        "command": command, "description": "a long one"}}}], "done"], "default": "done"}))
    proc, url = start_inspect(["--project", str(project), "--scenario", str(scenario), "--prompt", "go", "--trust"])
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        card = page.wait_for_selector("[data-testid=permission]", timeout=60_000)
        title = card.inner_text().split("\n")[0]
        assert "HIDDEN-TAIL" not in title  # the title alone would not have shown it
        whole = card.query_selector("[data-testid=approved]").inner_text()
        assert padding in whole and whole.rstrip().endswith("echo HIDDEN-TAIL-RUNS-TOO > tail.txt"), whole
        assert "\n" in whole
        card.query_selector("button[data-option='reject_once']").click()
        page.wait_for_selector("[data-testid=result]", timeout=60_000)
    finally:
        stop(proc)
