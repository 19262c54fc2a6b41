"""Line framing: splitting, empty lines, over-long lines, malformed lines, and the byte-stream transport."""

from __future__ import annotations

import json

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipc.errors import LineTooLong, MalformedLine
from ipc.framing import LineDecoder, RawLine, encode_message, open_stream_transport


def feed_all(decoder: LineDecoder, *chunks: bytes) -> list:
    items = []
    for chunk in chunks:
        items += decoder.feed(chunk)
    return items + decoder.finish()


def test_messages_split_on_newlines_across_chunks():
    items = feed_all(LineDecoder(), b'{"a":1}\n{"b":', b'2}\n[1,2', b"]\n")
    assert items == [{"a": 1}, {"b": 2}, [1, 2]]


def test_empty_lines_and_crlf_are_tolerated():
    assert feed_all(LineDecoder(), b'\n\n  \r\n{"a":1}\r\n\n') == [{"a": 1}]


def test_last_line_without_newline_counts_at_eof():
    assert feed_all(LineDecoder(), b'{"a":1}\n{"b":2}') == [{"a": 1}, {"b": 2}]


def test_invalid_utf8_and_invalid_json_become_items_and_reading_goes_on():
    items = feed_all(LineDecoder(), b'\xff\xfe{"x":1}\n', b"garbage\n", b'{"ok":true}\n')
    assert isinstance(items[0], MalformedLine) and "UTF-8" in items[0].detail
    assert isinstance(items[1], MalformedLine) and "JSON" in items[1].detail
    assert items[2] == {"ok": True}


def test_utf16_json_is_not_accepted_as_utf8():
    line = json.dumps({"a": 1}).encode("utf-16") + b"\n"
    assert isinstance(feed_all(LineDecoder(), line)[0], MalformedLine)


def test_overlong_line_is_discarded_without_buffering_it_and_next_line_is_read():
    decoder = LineDecoder(max_line_bytes=100)
    chunks = [b'{"first":1}\n', b"x" * 80, b"y" * 80, b"z" * 80, b'\n{"after":2}\n']
    items = feed_all(decoder, *chunks)
    assert items[0] == {"first": 1}
    assert isinstance(items[1], LineTooLong) and items[1].length == 240
    assert items[2] == {"after": 2}
    assert len(decoder._buf) == 0  # nothing of the long line was kept


def test_overlong_line_inside_one_chunk():
    items = feed_all(LineDecoder(max_line_bytes=10), b'{"looooooooong":1}\n{"a":1}\n')
    assert isinstance(items[0], LineTooLong)
    assert items[1] == {"a": 1}


def test_line_of_exactly_the_limit_is_accepted():
    line = json.dumps({"k": "v" * 20}).encode()
    assert feed_all(LineDecoder(max_line_bytes=len(line)), line + b"\n") == [json.loads(line)]


messages = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8,
).map(lambda v: {"v": v})


@settings(max_examples=150, deadline=None)
@given(st.lists(messages, max_size=8), st.lists(st.integers(min_value=1, max_value=64), min_size=1, max_size=20))
def test_any_chunking_yields_the_messages_that_were_encoded(msgs, cuts):
    data = b"".join(encode_message(m) for m in msgs)
    chunks, pos, i = [], 0, 0
    while pos < len(data):
        step = cuts[i % len(cuts)]
        chunks.append(data[pos:pos + step])
        pos, i = pos + step, i + 1
    assert feed_all(LineDecoder(), *chunks) == msgs


def test_encoding_is_compact_utf8_one_line():
    data = encode_message({"text": "naïve\nline", "n": 1})
    assert data.count(b"\n") == 1 and data.endswith(b"\n")
    assert data == '{"text":"naïve\\nline","n":1}\n'.encode()
    assert encode_message(RawLine(b"not json")) == b"not json\n"


@pytest.mark.asyncio
async def test_stream_transport_through_a_child_process_echo():
    """Through real pipes (a `cat` child echoes them back): messages decode, bad lines arrive as items."""
    process = await anyio.open_process(["cat"])
    with anyio.fail_after(10):
        async with open_stream_transport(process.stdout, process.stdin, max_line_bytes=64) as transport:
            await transport.outgoing.send({"id": 1})
            await transport.outgoing.send(RawLine(b"x" * 100))
            await transport.outgoing.send(RawLine(b"\xff"))
            await transport.outgoing.send([{"id": 2}])
            got = [await transport.incoming.receive() for _ in range(4)]
        await process.aclose()
    assert got[0] == {"id": 1}
    assert isinstance(got[1], LineTooLong)
    assert isinstance(got[2], MalformedLine)
    assert got[3] == [{"id": 2}]
