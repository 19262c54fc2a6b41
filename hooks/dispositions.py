"""The signal dispositions every process the hook engine starts begins with: the defaults, as under Claude Code, even when this process was itself started with some of them ignored.

An ignored signal stays ignored across fork and exec. Started under `nohup` (or as a
background job of a script, which ignores SIGINT and SIGQUIT), this process would hand
SIGHUP ignored to every hook and to everything a hook starts: hooks/executors/leftovers.py
would then read every stray as a helper started with `nohup` and keep it until the session
ends, and a hook timed out with SIGTERM ignored would sit out its grace before the SIGKILL.
Claude Code's hooks start with every disposition at its default (node resets them). Popen's
`restore_signals` puts back only SIGPIPE and SIGXFSZ, the two Python ignores itself.

A caught signal, unlike an ignored one, is reset to its default by exec. So each of SIGHUP,
SIGINT, SIGQUIT and SIGTERM found ignored at a spawn gets, in this process, a handler that
does nothing: this process still shrugs the signal off (a blocking call it interrupts is
retried, PEP 475), and every child from then on execs with the default, at no cost per spawn
(a preexec_fn costs a fork instead of a vfork, 8-13 ms a hook; an `env --default-signal`
wrapper, an exec, ~1.7 ms). The other children of this process get the default too: the
sidecar's run in sessions of their own, where no terminal's hang-up reaches them, or are
short-lived tools. Handlers are set only from the main thread; a spawn from another thread
while a signal is still ignored resets it in that child instead (`preexec_fn`: slow, but only
there).
"""

from __future__ import annotations

import signal
from collections.abc import Callable

try:
    # What signal.getsignal wraps: its enum conversion reprs any handler that is not SIG_DFL or SIG_IGN, and the
    # repr of asyncio.run's SIGINT handler (a partial holding the main task) made each spawn ~100 us dearer.
    from _signal import getsignal as _getsignal  # type: ignore[import-not-found]
except ImportError:  # not CPython
    _getsignal = signal.getsignal

# Not SIGCHLD, SIGTTIN, SIGTTOU or SIGPIPE: for those, caught and ignored differ for this process itself.
SIGNALS = tuple(getattr(signal, name) for name in ("SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM") if hasattr(signal, name))


def _shrugged_off(signum: int, frame: object) -> None:
    """Stands in for SIG_IGN: the signal does nothing here, and exec resets it to the default in a child."""


def _defaults_in_child() -> None:
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_DFL)


def child_setup() -> Callable[[], None] | None:
    """What a hook's spawn passes as `preexec_fn`: None (nothing to do in the child), unless a signal is still
    ignored here and this is not the main thread."""
    for sig in SIGNALS:
        if _getsignal(sig) == signal.SIG_IGN:
            try:
                signal.signal(sig, _shrugged_off)
            except ValueError:  # not the main thread
                return _defaults_in_child
    return None
