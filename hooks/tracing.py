"""OpenTelemetry traces of sessions, turns, model requests, tool calls, hook executions and permission round trips.

Off by default, and then free: nothing here imports OpenTelemetry, and every call site checks one attribute of
the session's state (`SessionTrace` or None) before doing anything.

**Who may switch it on:** the user, never a project. `configure()` reads the sidecar's own environment — the
standard OpenTelemetry variables (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` turn it
on; `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` off; `OTEL_SERVICE_NAME`, `OTEL_EXPORTER_OTLP_HEADERS`,
`OTEL_EXPORTER_OTLP_PROTOCOL` apply) and `ORION_TRACING=0|1` — and the user's Orion settings
(`~/.config/orion/settings.json`: `"tracing": {"enabled": true, "endpoint": "http://...", "protocol":
"http/protobuf" | "grpc", "serviceName": "..."}`). A project's settings (its `env`, any `tracing` key) reach the
CLI's processes at most, never this process: a cloned project cannot make the sidecar send anything anywhere.

Trace context flows in from the frontend: a W3C `traceparent` in `session/new`'s or `session/prompt`'s `_meta`
becomes the parent of the session's (or that turn's) span. Attribute values are redacted like everything else
Orion writes.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from hooks.redaction import redact

log = logging.getLogger("hooks.tracing")

TRACE_KEY = "_orion_trace"  # SessionContext.state[TRACE_KEY]: the session's SessionTrace, when tracing is on
SCOPE = "orion-sidecar"
MAX_ATTRIBUTE_CHARS = 2000


class _Config:
    __slots__ = ("enabled", "tracer", "provider", "reason")

    def __init__(self) -> None:
        self.enabled = False
        self.tracer: Any = None
        self.provider: Any = None
        self.reason = "not configured"


TRACING = _Config()


def _truthy(value: str | None) -> bool | None:
    if value is None or not value.strip():
        return None
    return value.strip().lower() in ("1", "true", "yes", "on")


def _user_settings() -> dict[str, Any]:
    from hooks.paths import user_settings_path

    try:
        data = json.loads(user_settings_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    tracing = data.get("tracing") if isinstance(data, dict) else None
    return tracing if isinstance(tracing, dict) else {}


def configure(*, env: dict[str, str] | None = None, exporter: Any = None) -> bool:
    """Decide once per process whether to trace, from the user's environment and settings; True when on.

    `exporter`: a span exporter to use instead of OTLP (tests embedding the runner)."""
    env = dict(os.environ) if env is None else env
    settings = _user_settings()
    explicit = _truthy(env.get("ORION_TRACING"))
    endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    wanted = explicit if explicit is not None else bool(endpoint) or settings.get("enabled") is True
    if _truthy(env.get("OTEL_SDK_DISABLED")) or (env.get("OTEL_TRACES_EXPORTER") or "").strip().lower() == "none":
        wanted = False
    if not wanted and exporter is None:
        TRACING.enabled, TRACING.reason = False, "off (no OTEL_EXPORTER_OTLP_ENDPOINT, ORION_TRACING or user setting)"
        return False
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError as exc:
        TRACING.enabled, TRACING.reason = False, f"off: OpenTelemetry is not installed ({exc.name})"
        log.warning("tracing was asked for but %s", TRACING.reason)
        return False
    attributes = {"service.name": env.get("OTEL_SERVICE_NAME") or settings.get("serviceName") or SCOPE}
    provider = TracerProvider(resource=Resource.create(attributes))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        made = _otlp_exporter(env, settings, endpoint)
        if made is None:
            return False
        provider.add_span_processor(BatchSpanProcessor(_Reporting(made, _describe(env, settings, endpoint))))
        _quiet_exporters()
    TRACING.provider, TRACING.tracer = provider, provider.get_tracer(SCOPE)
    TRACING.enabled, TRACING.reason = True, "on"
    log.info("tracing on (%s)", "in-process exporter" if exporter is not None else "OTLP")
    return True


def _otlp_exporter(env: dict[str, str], settings: dict[str, Any], endpoint: str | None) -> Any:
    protocol = (env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
                or settings.get("protocol") or "http/protobuf").strip().lower()
    from_settings = settings.get("endpoint") if not endpoint and isinstance(settings.get("endpoint"), str) else None
    try:
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

            return GrpcExporter(endpoint=from_settings) if from_settings else GrpcExporter()
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

        if from_settings:
            return HttpExporter(endpoint=from_settings.rstrip("/") + "/v1/traces")
        return HttpExporter()
    except ImportError as exc:
        TRACING.enabled = False
        TRACING.reason = (f"off: the OTLP {protocol} exporter is not installed ({exc.name}); "
                          + ("pip install 'orion-sidecar[tracing-grpc]'" if protocol == "grpc" else "reinstall orion-sidecar"))
        log.warning("tracing was asked for but %s", TRACING.reason)
        return None


def _describe(env: dict[str, str], settings: dict[str, Any], endpoint: str | None) -> str:
    """Where spans go and which setting says so, for a person fixing an unreachable collector."""
    if env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return f"{env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']} (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)"
    if endpoint:
        return f"{endpoint} (OTEL_EXPORTER_OTLP_ENDPOINT)"
    if isinstance(settings.get("endpoint"), str):
        return f"{settings['endpoint']} (tracing.endpoint in the user's Orion settings)"
    return "the OTLP default endpoint (set OTEL_EXPORTER_OTLP_ENDPOINT or tracing.endpoint in the user's Orion settings)"


class _ExporterNoise(logging.Filter):
    """Takes the OTLP exporters' own log lines (one per retry, one per failed batch) off the log: their first
    warning is the moment to report, once, through `_Reporting`."""

    def __init__(self) -> None:
        super().__init__()
        self.reporter: _Reporting | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING and self.reporter is not None:
            try:
                detail = record.getMessage()
            except Exception:  # a record whose arguments do not format
                detail = str(record.msg)
            self.reporter.problem(detail)
        return False


_NOISE = _ExporterNoise()


def _quiet_exporters() -> None:
    """A logger's filter sees only its own records: attach to every exporter logger made so far (the exporter
    modules are imported by now). The SDK's own warnings (a full queue, an attribute set on an ended span) are not a
    collector's outage and stay in the log."""
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("opentelemetry.exporter"):
            logger = logging.getLogger(name)
            if _NOISE not in logger.filters:
                logger.addFilter(_NOISE)


class _Reporting:
    """A span exporter around the OTLP one. A collector that cannot be reached, or refuses the spans, is reported
    once, at its first failed attempt, naming the setting (a warning: the stderr log and a `log` event), and again
    once when it takes spans again. The session never waits for it (the batch processor exports on its own
    thread); spans that cannot be delivered are dropped."""

    def __init__(self, inner: Any, where: str) -> None:
        self.inner, self.where = inner, where
        self.down = False
        _NOISE.reporter = self

    def problem(self, detail: str) -> None:
        if self.down:
            return
        self.down = True
        log.warning("tracing: spans cannot be sent to %s (%s); the session goes on, and spans are dropped while the "
                    "collector does not answer", redact(self.where), redact(" ".join(detail.split())[:300]))

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        try:
            result = self.inner.export(spans)
        except Exception as exc:  # an exporter bug must not reach the batch thread's loop
            self.problem(f"{type(exc).__name__}: {exc}")
            return SpanExportResult.FAILURE
        if result == SpanExportResult.SUCCESS:
            if self.down:
                self.down = False
                log.warning("tracing: the collector at %s takes spans again", redact(self.where))
        else:
            self.problem("the export failed")
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return bool(self.inner.force_flush(timeout_millis))


# --------------------------------------------------------------------------- one session


# Attributes that carry text a hook or the agent wrote (a reason, an error): redacted. The rest are names and
# identifiers from settings and the protocol (hook name, type, event, model, tool name, ids), capped only.
FREE_TEXT = frozenset({"orion.hook.reason", "orion.hook.error", "orion.permission.reason", "orion.session.end_reason",
                       "orion.stop_reason", "status"})


def _value(value: Any, free_text: bool = True) -> Any:
    if isinstance(value, (bool, int, float)):
        return value
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return (redact(text) if free_text else text)[:MAX_ATTRIBUTE_CHARS]


def _attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    return {key: _value(value, key in FREE_TEXT) for key, value in attributes.items() if value is not None}


def ids(span: Any) -> tuple[str, str]:
    context = span.get_span_context()
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


class SessionTrace:
    """The spans of one session: the session, its current turn, model requests and tool calls by their id."""

    def __init__(self, session_id: str, attributes: dict[str, Any], traceparent: str | None = None) -> None:
        from opentelemetry import trace

        self._trace = trace
        self.tracer = TRACING.tracer
        parent = _extract(traceparent)
        self.session = self.tracer.start_span("orion.session", context=parent,
                                              attributes=_attributes({"orion.session.id": session_id, **attributes}))
        self.turn: Any = None
        self.model: Any = None
        self.tools: dict[str, Any] = {}
        # Ended tool spans stay parents for a while: a PostToolUse hook can be called after the result arrived.
        self.finished: dict[str, Any] = {}

    def _context(self, span: Any) -> Any:
        return self._trace.set_span_in_context(span)

    def parent(self, tool_use_id: str | None = None) -> Any:
        """What a hook or a permission belongs to: its tool call, else the turn, else the session."""
        span = ((self.tools.get(tool_use_id) or self.finished.get(tool_use_id)) if tool_use_id else None) \
            or self.turn or self.session
        return self._context(span)

    # ------------------------------------------------------------------ turns and what happens in them

    def start_turn(self, prompt: str, traceparent: str | None = None) -> None:
        self.end_turn(None)
        context = _extract(traceparent) if traceparent else self._context(self.session)
        self.turn = self.tracer.start_span("orion.turn", context=context,
                                           attributes=_attributes({"orion.prompt.chars": len(prompt)}))

    def end_turn(self, result: Any) -> None:
        for tool_use_id in list(self.tools):
            self.end_tool(tool_use_id, "unfinished")
        self.end_model(None)
        turn, self.turn = self.turn, None
        if turn is None:
            return
        if result is not None:
            usage = getattr(result, "usage", None) or {}
            turn.set_attributes(_attributes({
                "orion.stop_reason": getattr(result, "stop_reason", None),
                "orion.num_turns": getattr(result, "num_turns", None),
                "gen_ai.usage.input_tokens": usage.get("input_tokens"),
                "gen_ai.usage.output_tokens": usage.get("output_tokens"),
                "orion.cost_usd": getattr(result, "cost_usd", None),
            }))
            if getattr(result, "is_error", False):
                turn.set_status(self._status(False, getattr(result, "stop_reason", "error")))
        turn.end()

    def start_model(self, model: str | None) -> None:
        self.end_model(None)
        self.model = self.tracer.start_span("orion.model_request", context=self._context(self.turn or self.session),
                                            attributes=_attributes({"gen_ai.request.model": model}))

    def end_model(self, usage: dict[str, Any] | None) -> None:
        model, self.model = self.model, None
        if model is None:
            return
        if usage:
            model.set_attributes(_attributes({"gen_ai.usage.input_tokens": usage.get("input_tokens"),
                                              "gen_ai.usage.output_tokens": usage.get("output_tokens")}))
        model.end()

    def start_tool(self, tool_use_id: str, name: str) -> None:
        """Once per call: the agent's message naming the tool, or the first hook or permission ask for it (the CLI
        calls those before that message is read), whichever comes first."""
        if tool_use_id in self.tools or tool_use_id in self.finished:
            return
        self.tools[tool_use_id] = self.tracer.start_span(
            f"orion.tool {name}", context=self._context(self.turn or self.session),
            attributes=_attributes({"orion.tool.name": name, "orion.tool.call_id": tool_use_id}))

    def end_tool(self, tool_use_id: str, status: str) -> None:
        span = self.tools.pop(tool_use_id, None)
        if span is None:
            return
        self.finished[tool_use_id] = span
        while len(self.finished) > 256:
            self.finished.pop(next(iter(self.finished)))
        span.set_attribute("orion.tool.status", status)  # one of a few words: nothing to redact
        if status in ("failed", "denied", "unfinished"):
            span.set_status(self._status(False, status))
        span.end()

    def end(self, reason: str) -> None:
        self.end_turn(None)
        self.session.set_attribute("orion.session.end_reason", _value(reason))
        self.session.end()

    # ------------------------------------------------------------------ hooks and permissions

    def start_hook(self, spec: Any, event: str, tool_use_id: str | None, tool_name: Any = None) -> Any:
        if tool_use_id and isinstance(tool_name, str):
            self.start_tool(tool_use_id, tool_name)
        return self.tracer.start_span(f"orion.hook {spec.name}", context=self.parent(tool_use_id), attributes=_attributes({
            "orion.hook.name": spec.name, "orion.hook.type": spec.type, "orion.hook.source": spec.source,
            "orion.hook.event": event, "orion.hook.matcher": getattr(spec, "matcher", None),
            "orion.hook.fail_closed": bool(getattr(spec, "fail_closed", False)),
            "orion.tool.call_id": tool_use_id}))

    def end_hook(self, span: Any, result: Any, decision: str | None, reason: str | None) -> tuple[str, str]:
        span.set_attributes(_attributes({
            "orion.hook.outcome": result.outcome, "orion.hook.decision": decision, "orion.hook.reason": reason,
            "orion.hook.exit_code": result.exit_code, "orion.hook.duration_ms": round(result.duration_ms, 3),
            "orion.hook.timed_out": result.outcome == "timeout", "orion.hook.error": result.error,
            "orion.hook.background": result.background}))
        if result.outcome in ("error", "timeout"):
            span.set_status(self._status(False, result.error or result.outcome))
        span.end()
        return ids(span)

    def start_permission(self, tool_name: str, tool_use_id: str | None, reason: str | None) -> Any:
        if tool_use_id:
            self.start_tool(tool_use_id, tool_name)
        return self.tracer.start_span("orion.permission", context=self.parent(tool_use_id), attributes=_attributes({
            "orion.tool.name": tool_name, "orion.tool.call_id": tool_use_id, "orion.permission.reason": reason}))

    def end_permission(self, span: Any, outcome: str) -> None:
        span.set_attribute("orion.permission.outcome", outcome)  # allow | deny | cancelled
        span.end()

    def _status(self, ok: bool, description: str | None) -> Any:
        from opentelemetry.trace import Status, StatusCode

        return Status(StatusCode.OK if ok else StatusCode.ERROR, None if ok else _value(description or "error"))


def _extract(traceparent: str | None) -> Any:
    if not traceparent or not isinstance(traceparent, str):
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator().extract({"traceparent": traceparent})


_configured = False


def start_session(state: dict[str, Any], session_id: str, attributes: dict[str, Any],
                  traceparent: str | None = None) -> SessionTrace | None:
    """The session's trace in its state (TRACE_KEY), when tracing is on; None otherwise. The first session of the
    process reads the configuration (configure)."""
    global _configured
    if not _configured:
        _configured = True
        if not TRACING.enabled:
            configure()
    if not TRACING.enabled:
        return None
    trace = SessionTrace(session_id, attributes, traceparent)
    state[TRACE_KEY] = trace
    return trace


