"""A capped output buffer: keeps the first bytes up to a cap, counts the rest, and splits what it keeps into lines for streaming."""

from __future__ import annotations

OUTPUT_CAP = 1024 * 1024  # bytes kept per stream
MAX_LINE_CHARS = 4096  # a streamed progress line longer than this is cut
MAX_STREAMED_LINES = 1000  # per stream and execution; the full (capped) text is in the response anyway
NOT_STREAMED = "[orion: further output not streamed; see the hook response]"


class Capture:
    __slots__ = ("cap", "chunks", "size", "dropped", "partial", "lines", "streamed", "stream")

    def __init__(self, stream: bool, cap: int = OUTPUT_CAP) -> None:
        self.cap = cap
        self.chunks: list[bytes] = []
        self.size = 0
        self.dropped = 0
        self.partial = b""
        self.lines: list[str] = []  # complete lines not yet handed to the observer
        self.streamed = 0
        self.stream = stream

    def feed(self, data: bytes) -> None:
        room = self.cap - self.size
        if room <= 0:
            self.dropped += len(data)
            return
        keep = data if len(data) <= room else data[:room]
        self.dropped += len(data) - len(keep)
        self.chunks.append(keep)
        self.size += len(keep)
        if self.stream and self.streamed <= MAX_STREAMED_LINES:
            self._split(keep)

    def _split(self, data: bytes) -> None:
        buf = self.partial + data
        *complete, self.partial = buf.split(b"\n")
        if len(self.partial) > MAX_LINE_CHARS:
            complete.append(self.partial)
            self.partial = b""
        for raw in complete:
            self._line(raw)

    def _line(self, raw: bytes) -> None:
        if self.streamed < MAX_STREAMED_LINES:
            self.lines.append(raw[:MAX_LINE_CHARS].decode(errors="replace").rstrip("\r"))
        elif self.streamed == MAX_STREAMED_LINES:
            self.lines.append(NOT_STREAMED)
        self.streamed += 1

    def finish(self) -> None:
        if self.stream and self.partial and self.streamed <= MAX_STREAMED_LINES:
            self._line(self.partial)
        self.partial = b""

    def take_lines(self) -> list[str]:
        lines, self.lines = self.lines, []
        return lines

    def text(self) -> str:
        return b"".join(self.chunks).decode(errors="replace")
