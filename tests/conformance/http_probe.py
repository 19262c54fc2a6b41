"""The server an `http` conformance hook posts to: it records each call as the command probe does, then answers as
its case says.

`POST /hook/<tag>` appends `{"tag", "stdin": <the posted JSON>, "cwd": "", "env": {}, "content_type"}` to
`probe.log.jsonl` in the hooks folder it serves, then looks `<tag>` up in `behaviours.json` there: `http_status`
(default 200) and `http_body` (a string as it is, anything else as JSON; default empty), after `http_sleep` seconds. One per run, on 127.0.0.1
and a free port; the same for the bare CLI and the sidecar.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


class HttpProbe:
    def __init__(self, hooks_dir: Path) -> None:
        self.hooks_dir = hooks_dir
        probe = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8", "replace")
                tag = urlsplit(self.path).path.rsplit("/", 1)[-1]  # a query or fragment is the case's, not the tag
                probe.record(tag, raw, self.headers.get("Content-Type"))
                status, body, sleep = probe.answer(tag)
                if sleep:
                    time.sleep(sleep)
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json" if body[:1] in "{[" and body else "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> HttpProbe:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def record(self, tag: str, raw: str, content_type: str | None) -> None:
        try:
            stdin: Any = json.loads(raw)
        except ValueError:
            stdin = {"unparsed": raw}
        line = {"tag": tag, "stdin": stdin, "cwd": "", "env": {}, "content_type": content_type}
        with open(self.hooks_dir / "probe.log.jsonl", "a", encoding="utf-8") as log:
            log.write(json.dumps(line) + "\n")

    def answer(self, tag: str) -> tuple[int, str, float]:
        behaviours = json.loads((self.hooks_dir / "behaviours.json").read_text())
        how = behaviours.get(tag, {})
        body = how.get("http_body", "")
        return (int(how.get("http_status", 200)), body if isinstance(body, str) else json.dumps(body),
                float(how.get("http_sleep", 0)))
