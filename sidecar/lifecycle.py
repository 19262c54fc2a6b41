"""Serving stdio until told to stop (exit, EOF, SIGTERM/SIGINT, parent gone, stdout broken), then an orderly, bounded shutdown."""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from ipc.framing import DEFAULT_MAX_BATCH_BYTES, DEFAULT_MAX_LINE_BYTES, Transport, open_stdio_transport
from ipc.peer import DEFAULT_MAX_BATCH_ITEMS, JsonRpcPeer
from sidecar.app import SidecarApp
from sidecar.log_forward import forward_logs

if TYPE_CHECKING:
    from sidecar.handshake import FirstContact
    from sidecar.supervisor import Supervisor

logger = logging.getLogger("sidecar.lifecycle")


@dataclass(slots=True, frozen=True)
class ShutdownPolicy:
    """Time budgets (seconds) of an orderly shutdown; the hard deadline guarantees the process never lingers."""

    grace: float = 2.0  # in-flight requests may finish
    cancel_wait: float = 0.5  # cancelled requests may answer -32800
    flush: float = 2.0  # queued output may reach the frontend
    hard_deadline: float = 15.0  # after a stop is requested, the process is gone by then, whatever happens
    parent_poll: float = 1.0


async def serve(app: SidecarApp, transport: Transport, policy: ShutdownPolicy = ShutdownPolicy(),
                *, watch_signals: bool = False, watch_parent: bool = False,
                max_batch_items: int = DEFAULT_MAX_BATCH_ITEMS, supervisor: Supervisor | None = None) -> None:
    """Serve one connection until a stop is requested, then shut down in order."""
    peer = JsonRpcPeer(transport, routes=app.routes, guard=app.guard, name="sidecar", max_batch_items=max_batch_items)
    app.attach(peer)
    async with anyio.create_task_group() as tg:
        tg.start_soon(peer.run)
        tg.start_soon(_stop_on_eof, app, peer)
        tg.start_soon(forward_logs, app)
        if watch_signals:
            tg.start_soon(_stop_on_signals, app)
        if watch_parent:
            tg.start_soon(_stop_when_orphaned, app, policy.parent_poll)
        if supervisor is not None:
            tg.start_soon(_sweep_dead_sidecars, supervisor)
            tg.start_soon(_keep_watchdog, supervisor, policy.parent_poll)
        await app.stop_requested.wait()
        _arm_hard_deadline(policy.hard_deadline)
        await _orderly_shutdown(app, peer, policy, frontend_gone=transport.broken)
        tg.cancel_scope.cancel()


async def serve_stdio(app: SidecarApp, policy: ShutdownPolicy = ShutdownPolicy(), *,
                      max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
                      max_batch_items: int = DEFAULT_MAX_BATCH_ITEMS, first: FirstContact | None = None) -> int:
    """`python -m sidecar`: serve this process's stdin/stdout; returns the exit code (always 0 after an orderly stop).

    `first`: what `sidecar.handshake.answer_early` read (and maybe answered) before the server was imported."""
    from hooks.paths import data_dir
    from sidecar import supervisor as supervision

    # Before anything can start a child: from here on, none outlives this process (sidecar/supervisor.py).
    supervisor = supervision.install(data_dir())
    if first is not None and first.params is not None:
        from sidecar.handshake import adopt

        adopt(app, first)
    try:
        async with open_stdio_transport(max_line_bytes=max_line_bytes, flush_timeout=policy.flush,
                                        max_batch_bytes=max_batch_bytes,
                                        prefix=first.rest if first is not None else b"") as transport:
            await serve(app, transport, policy, watch_signals=True, watch_parent=True,
                        max_batch_items=max_batch_items, supervisor=supervisor)
    finally:
        supervisor.stop()
    logger.info("exited (%s)", app.stop_reason)
    return 0


async def _orderly_shutdown(app: SidecarApp, peer: JsonRpcPeer, policy: ShutdownPolicy, *,
                           frontend_gone: anyio.Event | None = None) -> None:
    if app.state != "shutting_down":
        app.state = "shutting_down"
    with anyio.move_on_after(policy.grace):
        async with anyio.create_task_group() as tg:
            async def until(wait: Callable[[], Awaitable[object]]) -> None:
                await wait()
                tg.cancel_scope.cancel()

            tg.start_soon(until, peer.wait_idle)
            if frontend_gone is not None:
                # With stdout broken no answer can reach anyone: waiting for in-flight calls only delays the exit.
                tg.start_soon(until, frontend_gone.wait)
    if peer.inflight:
        logger.warning("cancelling %d in-flight call(s) (grace period over, or the frontend is gone)", peer.inflight)
        peer.cancel_inflight()
        with anyio.move_on_after(policy.cancel_wait):
            await peer.wait_idle()
    await app.run_shutdown_callbacks()


async def _sweep_dead_sidecars(supervisor: Supervisor) -> None:
    # Off the loop and off the start-up path: the first requests are answered while it runs.
    try:
        await anyio.to_thread.run_sync(supervisor.sweep_dead, abandon_on_cancel=True)
    except Exception:
        logger.exception("sweeping dead sidecars' leftovers failed")


async def _keep_watchdog(supervisor: Supervisor, interval: float) -> None:
    while supervisor.ensure_watchdog():
        await anyio.sleep(interval)
    logger.error("the watchdog keeps dying; children may outlive this sidecar if it is killed")


async def _stop_on_eof(app: SidecarApp, peer: JsonRpcPeer) -> None:
    await peer.eof.wait()
    app.request_stop("end of input (frontend closed stdin)")


async def _stop_on_signals(app: SidecarApp) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            app.request_stop(f"signal {signal.Signals(signum).name}")


async def _stop_when_orphaned(app: SidecarApp, interval: float) -> None:
    # EOF normally tells us the frontend died, but a grandchild holding the pipe open would hide that.
    parent = os.getppid()
    while os.getppid() == parent:
        await anyio.sleep(interval)
    app.request_stop("parent process died")


def _arm_hard_deadline(seconds: float) -> None:
    """A last resort outside the event loop: a callback blocking the loop cannot keep the process alive."""

    def expire() -> None:
        logger.error("shutdown overran the %.1f s hard deadline; exiting now", seconds)
        os._exit(0)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
