"""A collector that goes away and comes back, through the real OTLP/HTTP exporter and a real local receiver: the
outage is reported once (naming where spans go), the return once, and the exporter's own retry lines stay out of
the log."""

from __future__ import annotations

import logging
import socket

import pytest

from hooks import tracing
from tests.tracing.otlp_receiver import Receiver


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_down_then_back_is_said_once_each(caplog: pytest.LogCaptureFixture) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    reporting = tracing._Reporting(OTLPSpanExporter(endpoint=endpoint + "/v1/traces", timeout=1),
                                   f"{endpoint} (OTEL_EXPORTER_OTLP_ENDPOINT)")
    tracing._quiet_exporters()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(reporting))
    tracer = provider.get_tracer("outage-test")
    caplog.set_level(logging.DEBUG)
    try:
        for n in range(3):  # nothing listens: three failed exports
            tracer.start_span(f"lost {n}").end()
        said = [r for r in caplog.records if r.name == "hooks.tracing"]
        assert len(said) == 1 and said[0].levelno == logging.WARNING
        assert endpoint in said[0].getMessage() and "OTEL_EXPORTER_OTLP_ENDPOINT" in said[0].getMessage()
        # The exporter's own words for the cause: the refused connection, or (when its deadline came before a
        # retry, as on a loaded machine) its "failed to export … due to timeout".
        assert any(word in said[0].getMessage().lower() for word in ("refused", "failed to export"))
        assert not [r for r in caplog.records if r.name.startswith("opentelemetry.exporter")]

        back = Receiver().start(port)  # the collector comes back on the same port
        try:
            tracer.start_span("delivered").end()
            tracer.start_span("delivered too").end()
        finally:
            back.stop()
        said = [r.getMessage() for r in caplog.records if r.name == "hooks.tracing"]
        assert len(said) == 2 and "takes spans again" in said[1]
        assert [s.name for s in back.spans] == ["delivered", "delivered too"]
    finally:
        provider.shutdown()

