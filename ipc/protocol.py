"""Pydantic models for every method's params and result, every event, and the sidecar → frontend requests (camelCase on the wire).

The models the first requests need live here; those of sessions, hooks, memory and their events live in
`ipc.protocol_agent` and appear here on first use (`p.SessionNewParams`, `from ipc.protocol import ...`):
creating ~45 model classes costs ~15 ms that a starting sidecar does not need before `initialize` answers.
"""

from __future__ import annotations

import importlib
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StrictInt
from pydantic.alias_generators import to_camel

PROTOCOL_VERSION = "2026-11-01"


class WireModel(BaseModel):
    """Base of every wire model: snake_case in Python, camelCase on the wire, unknown keys ignored (forward compatible)."""

    # defer_build: most models are never used in a given run, and building them all costs start-up time.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True)

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


class Empty(WireModel):
    """No fields."""


# --------------------------------------------------------------------------- lifecycle


class ClientInfo(WireModel):
    name: str
    version: str


class ServerInfo(WireModel):
    name: str
    version: str


class HandshakeParams(WireModel):
    """`initialize` of either dialect: an integer `protocolVersion` is ACP, a date string Orion's first protocol."""

    protocol_version: Union[StrictInt, str]
    client_info: dict[str, Any] | None = None
    client_capabilities: dict[str, Any] = Field(default_factory=dict)
    capabilities: dict[str, Any] = Field(default_factory=dict)
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class InitializeParams(WireModel):
    """First request of every connection; any other request before it fails with -31002."""

    protocol_version: str
    client_info: ClientInfo
    capabilities: dict[str, Any] = Field(default_factory=dict)


class ServerCapabilities(WireModel):
    methods: list[str]
    events: list[str]


class InitializeResult(WireModel):
    """`capabilities.methods` lists the methods registered in this sidecar; `capabilities.events` every event it may emit."""

    protocol_version: str
    server_info: ServerInfo
    capabilities: ServerCapabilities


class CancelRequestParams(WireModel):
    """Notification `$/cancelRequest`: cancel the in-flight request with this id; it answers -32800."""

    id: int | str



# --------------------------------------------------------------------------- log


class LogEvent(WireModel):
    """A log record forwarded from the sidecar."""

    level: Literal["debug", "info", "warning", "error", "critical"]
    logger: str
    message: str
    data: dict[str, Any] | None = None


def __getattr__(name: str) -> Any:
    # Dunder probes (copy, pickle, typing) must not load the agent models.
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    for module_name in _LAZY_MODULES:
        module = importlib.import_module(module_name)
        exported = {key: value for key, value in vars(module).items() if not key.startswith("_") and key not in globals()}
        globals().update(exported)
        if name in exported:
            return exported[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Sessions, hooks and memory (Orion's first dialect and the session core), then ACP and its `_orion/` extensions.
_LAZY_MODULES = ("ipc.protocol_agent", "ipc.protocol_acp")


def __dir__() -> list[str]:
    names = set(globals())
    for module_name in _LAZY_MODULES:
        names.update(key for key in vars(importlib.import_module(module_name)) if not key.startswith("_"))
    return sorted(names)
