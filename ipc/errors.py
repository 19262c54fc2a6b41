"""JSON-RPC error codes, the wire layer's exception tree, and the one function that turns an exception into a wire error.

    IpcError
    ├── FramingError                 a line that could not become a message (an item in the stream, never raised by the reader)
    │   ├── LineTooLong              longer than the configured limit; discarded, reading goes on
    │   ├── MalformedLine            invalid UTF-8 or invalid JSON
    │   └── BatchTooLarge            a batch over the byte limit (discarded unread) or the member limit; -32600
    ├── ConnectionClosed             the other side hung up (EOF) or we closed; every waiter gets this
    ├── RequestTimeout               an outbound request got no answer in time (also a TimeoutError)
    └── RpcError                     carries (code, message, data); raise it from a handler to answer with that error
        ├── ParseError               -32700
        ├── InvalidRequest           -32600
        ├── MethodNotFound           -32601
        ├── InvalidParams            -32602
        ├── InternalError            -32603
        ├── ServerError              -32603 (an unexpected failure: ACP's internal error)
        ├── AuthRequired             -32000 (ACP: no credential reaches the model)
        ├── ResourceNotFound         -32002 (ACP: a named file, directory or past session does not exist)
        ├── RequestCancelled         -32800
        ├── SessionNotFound          -31001 (Orion's own codes: -31099..-31000, clear of every JSON-RPC/ACP code)
        ├── NotInitialized           -31002
        ├── SessionBusy              -31003
        ├── HookEngineError          -31004
        ├── PermissionTimeout        -31005
        ├── ModelUnavailable         -31006
        ├── ServerBusy               -31007
        └── RemoteError              an error response received for one of *our* requests (any code)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

logger = logging.getLogger("ipc.errors")


@dataclass(slots=True, frozen=True)
class ErrorCode:
    """One row of the error table: the number, its default message, and when it is used."""

    code: int
    name: str
    message: str
    meaning: str


PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# ACP's own codes keep ACP's meanings (agentclientprotocol.com, schema `ErrorCode`).
AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002
REQUEST_CANCELLED = -32800
# An unexpected failure inside a handler is ACP's (and JSON-RPC's) internal error.
SERVER_ERROR = INTERNAL_ERROR
# Orion's own codes live in -31099..-31000: outside JSON-RPC's reserved -32768..-32000, so they collide with
# nothing ACP defines now or may define later.
SESSION_NOT_FOUND = -31001
NOT_INITIALIZED = -31002
SESSION_BUSY = -31003
HOOK_ENGINE_ERROR = -31004
PERMISSION_TIMEOUT = -31005
MODEL_UNAVAILABLE = -31006
SERVER_BUSY = -31007
SETTINGS_CHANGED = -31008

ERROR_CODES: tuple[ErrorCode, ...] = (
    ErrorCode(PARSE_ERROR, "ParseError", "Parse error",
              "A line was not valid UTF-8 or not valid JSON, or was longer than the line limit (`data.reason`). `id` is null."),
    ErrorCode(INVALID_REQUEST, "InvalidRequest", "Invalid request",
              "Not a JSON-RPC 2.0 request object (or an empty batch, or a batch over the batch limits: "
              "`data.reason` `batchTooLarge`, with `limit`); also any request after `shutdown`."),
    ErrorCode(METHOD_NOT_FOUND, "MethodNotFound", "Method not found",
              "No handler is registered for the method (`data.method`)."),
    ErrorCode(INVALID_PARAMS, "InvalidParams", "Invalid params",
              "Params failed validation; `data.errors` lists pydantic's errors as `{loc, msg, type}`."),
    ErrorCode(INTERNAL_ERROR, "InternalError", "Internal error",
              "An unexpected failure inside a handler, or a result that failed its own model's validation (a "
              "sidecar bug); details are in the sidecar's stderr log, `data.type` names the exception."),
    ErrorCode(AUTH_REQUIRED, "AuthRequired", "Authentication required",
              "ACP: no credential can reach the model; the message names what to set, `authenticate` tells which "
              "methods are available."),
    ErrorCode(RESOURCE_NOT_FOUND, "ResourceNotFound", "Resource not found",
              "ACP: a file, directory or past session (`session/load`) named in the request does not exist."),
    ErrorCode(SESSION_NOT_FOUND, "SessionNotFound", "Session not found",
              "No live session has the given `sessionId`."),
    ErrorCode(NOT_INITIALIZED, "NotInitialized", "Not initialized",
              "A request other than `initialize` arrived before `initialize`."),
    ErrorCode(SESSION_BUSY, "SessionBusy", "Session busy",
              "A session already has 16 prompts waiting behind its running one (`data.limit`)."),
    ErrorCode(HOOK_ENGINE_ERROR, "HookEngineError", "Hook engine error",
              "The hook engine could not load, list, trust or run hooks."),
    ErrorCode(PERMISSION_TIMEOUT, "PermissionTimeout", "Permission timeout",
              "The frontend did not answer `session/request_permission` in time."),
    ErrorCode(MODEL_UNAVAILABLE, "ModelUnavailable", "Model unavailable",
              "The model endpoint could not be reached or refused the request."),
    ErrorCode(SERVER_BUSY, "ServerBusy", "Server busy",
              "Too many of the client's requests are still being served (`data.limit`, `data.inflight`): wait for "
              "their answers before sending more. Nothing of the refused request was done."),
    ErrorCode(SETTINGS_CHANGED, "SettingsChanged", "Settings changed",
              "A hook edit named the digest of a settings file that has changed since (`data.currentDigest`): "
              "nothing was written; read the file again with `hooks/settings` and redo the edit."),
    ErrorCode(REQUEST_CANCELLED, "RequestCancelled", "Request cancelled",
              "The request was cancelled by `$/cancelRequest` or by shutdown."),
)

_MESSAGES: dict[int, str] = {row.code: row.message for row in ERROR_CODES}


class IpcError(Exception):
    """Base of every error the wire layer defines."""


class FramingError(IpcError):
    """A line that could not become a message; delivered as a stream item so the reader keeps going."""

    reason = "malformed"

    def __init__(self, detail: str, *, length: int | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.length = length


class LineTooLong(FramingError):
    reason = "lineTooLong"


class MalformedLine(FramingError):
    reason = "malformed"


class BatchTooLarge(FramingError):
    """A batch over the batch limits (bytes, refused unread; or members): refused whole with one -32600."""

    reason = "batchTooLarge"

    def __init__(self, detail: str, *, limit: int, length: int | None = None, items: int | None = None) -> None:
        super().__init__(detail, length=length)
        self.limit = limit
        self.items = items


class ConnectionClosed(IpcError):
    """The other side closed the connection (EOF), or we did; no answer will come."""


class RequestTimeout(IpcError, TimeoutError):
    """An outbound request got no response within its timeout."""


class RpcError(IpcError):
    """An error with a JSON-RPC code; raising one from a handler answers the request with it."""

    code: int = SERVER_ERROR

    def __init__(self, message: str | None = None, data: Any = None, *, code: int | None = None) -> None:
        if code is not None:
            self.code = code
        self.message = message or _MESSAGES.get(self.code, "Internal error")
        self.data = data
        super().__init__(self.message)

    def to_wire(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ParseError(RpcError):
    code = PARSE_ERROR


class InvalidRequest(RpcError):
    code = INVALID_REQUEST


class MethodNotFound(RpcError):
    code = METHOD_NOT_FOUND


class InvalidParams(RpcError):
    code = INVALID_PARAMS


class InternalError(RpcError):
    code = INTERNAL_ERROR


class ServerError(RpcError):
    """An unexpected failure: ACP's internal error (-32603)."""

    code = SERVER_ERROR


class AuthRequired(RpcError):
    code = AUTH_REQUIRED


class ResourceNotFound(RpcError):
    code = RESOURCE_NOT_FOUND


class SessionNotFound(RpcError):
    code = SESSION_NOT_FOUND


class NotInitialized(RpcError):
    code = NOT_INITIALIZED


class SessionBusy(RpcError):
    code = SESSION_BUSY


class ServerBusy(RpcError):
    code = SERVER_BUSY


class SettingsChanged(RpcError):
    code = SETTINGS_CHANGED


class HookEngineError(RpcError):
    code = HOOK_ENGINE_ERROR


class PermissionTimeout(RpcError):
    code = PERMISSION_TIMEOUT


class ModelUnavailable(RpcError):
    code = MODEL_UNAVAILABLE


class RequestCancelled(RpcError):
    code = REQUEST_CANCELLED


class RemoteError(RpcError):
    """The other side answered one of our requests with an error object."""

    @classmethod
    def from_wire(cls, error: Any) -> RemoteError:
        if not isinstance(error, dict):
            return cls(f"malformed error object: {error!r}", code=INTERNAL_ERROR)
        code = error.get("code")
        return cls(str(error.get("message", "")), error.get("data"), code=code if isinstance(code, int) else INTERNAL_ERROR)


def validation_errors(exc: ValidationError) -> list[dict[str, Any]]:
    """Pydantic's errors reduced to what a client can act on: where, what, which kind."""
    return [{"loc": list(err["loc"]), "msg": err["msg"], "type": err["type"]} for err in exc.errors(include_url=False)]


def to_wire_error(exc: BaseException) -> dict[str, Any]:
    """The one place an exception becomes a JSON-RPC error object."""
    if isinstance(exc, RpcError):
        return exc.to_wire()
    if isinstance(exc, ValidationError):
        return InvalidParams(data={"errors": validation_errors(exc)}).to_wire()
    if isinstance(exc, FramingError):
        data: dict[str, Any] = {"reason": exc.reason, "detail": exc.detail}
        if exc.length is not None:
            data["length"] = exc.length
        if isinstance(exc, BatchTooLarge):
            # Valid JSON (or never read): the request is what is refused, not its syntax.
            data["limit"] = exc.limit
            if exc.items is not None:
                data["items"] = exc.items
            return InvalidRequest("Batch too large", data=data).to_wire()
        return ParseError(data=data).to_wire()
    # Unknown failures are a sidecar bug: the full traceback goes to stderr, the wire gets no internals.
    logger.error("unhandled error in handler", exc_info=exc)
    return ServerError(data={"type": type(exc).__name__}).to_wire()
