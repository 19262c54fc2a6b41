"""What every ACP client in this package shares (the official SDK's `Client` protocol): Orion's `_orion/` events under
their own names, the hook's reason on a permission request, and no extension methods of its own."""

from __future__ import annotations

from typing import Any


class OrionAcpClient:
    def on_orion_event(self, name: str, params: dict[str, Any]) -> None:
        raise NotImplementedError

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        # "_orion/hook_response" arrives as "orion/hook_response" (the SDK strips ACP's leading underscore).
        self.on_orion_event(method.lstrip("_").removeprefix("orion/"), params)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError(method)

    def on_connect(self, conn: Any) -> None:
        pass

    @staticmethod
    def permission_reason(kwargs: dict[str, Any]) -> str | None:
        """The reason Orion gives a permission request (a hook's ask), from `_meta.orion.reason`."""
        return ((kwargs.get("field_meta") or {}).get("orion") or {}).get("reason")
