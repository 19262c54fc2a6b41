"""The dispositions a hook process starts with when this process has SIGHUP ignored: the default, from the main thread at no cost per spawn (a do-nothing handler here, reset by exec), from another thread by a reset in the child."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading

import pytest

from hooks import dispositions

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/<pid>/status")

HUP = 1 << (signal.SIGHUP - 1)


@pytest.fixture
def sighup_ignored():
    saved = signal.getsignal(signal.SIGHUP)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, saved)


def child_ignores(preexec_fn) -> int:
    """The SigIgn mask of a shell spawned the way a hook is."""
    out = subprocess.run(["sh", "-c", "sed -n 's/^SigIgn:[[:space:]]*//p' /proc/$$/status"], capture_output=True,
                         text=True, start_new_session=True, preexec_fn=preexec_fn, check=True).stdout
    return int(out, 16)


def test_from_the_main_thread_nothing_runs_in_the_child_and_this_process_still_shrugs_sighup_off(sighup_ignored):
    assert child_ignores(None) & HUP, "the premise: an ignored signal survives exec"
    assert dispositions.child_setup() is None
    assert child_ignores(None) & HUP == 0
    handler = signal.getsignal(signal.SIGHUP)
    assert callable(handler) and handler(signal.SIGHUP, None) is None


def test_from_another_thread_the_child_resets_it(sighup_ignored):
    got = []
    worker = threading.Thread(target=lambda: got.append(dispositions.child_setup()))
    worker.start()
    worker.join(10)
    [setup] = got
    assert setup is not None and signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    assert child_ignores(setup) & HUP == 0
