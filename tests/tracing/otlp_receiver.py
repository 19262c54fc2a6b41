"""A local OTLP/HTTP trace receiver for the tests: it decodes what arrives with the official `opentelemetry-proto`
package (ExportTraceServiceRequest), as a collector would, and keeps the spans."""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


@dataclass
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    status_code: int  # 0 unset, 1 ok, 2 error
    service: str


@dataclass
class Receiver:
    spans: list[ReceivedSpan] = field(default_factory=list)
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self, port: int = 0) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.add(request)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def add(self, request: ExportTraceServiceRequest) -> None:
        with self.lock:
            self.requests += 1
            for resource_spans in request.resource_spans:
                resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        self.spans.append(ReceivedSpan(
                            name=span.name, trace_id=span.trace_id.hex(), span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            attributes={a.key: _value(a.value) for a in span.attributes},
                            status_code=span.status.code, service=str(resource.get("service.name"))))

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


class GrpcReceiver(Receiver):
    """The same receiver over OTLP/gRPC: a real grpcio server serving the official TraceService."""

    grpc_server: Any = None
    port: int = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, port: int = 0) -> GrpcReceiver:
        from concurrent import futures

        import grpc
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

        receiver = self

        class Service(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:  # noqa: N802
                receiver.add(request)
                return ExportTraceServiceResponse()

        self.grpc_server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), self.grpc_server)
        self.port = self.grpc_server.add_insecure_port(f"127.0.0.1:{port}")
        self.grpc_server.start()
        return self

    def stop(self) -> None:
        if self.grpc_server is not None:
            self.grpc_server.stop(grace=None)
