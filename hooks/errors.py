"""The hook engine's exception tree.

    HookEngineError
    ├── InvalidSessionId      (ValueError too: a session id that may not touch a path)
    ├── SettingsError         (a settings/override file the CLI `validate` command rejects)
    └── TrustError            (the trust store could not be read or written)

Hook failures are never exceptions: executors report them as ExecutionReport
values and the runner turns them into HookResult outcomes.
"""

from __future__ import annotations


class HookEngineError(Exception):
    """Base of every error the hook engine raises to its caller."""


class InvalidSessionId(HookEngineError, ValueError):
    pass


class SettingsError(HookEngineError):
    pass


class TrustError(HookEngineError):
    pass
