"""Which credential the Claude Code CLI of a real-model session will authenticate with, decided offline.

Nothing here touches the network, runs a command or returns a secret: an ``apiKeyHelper`` counts when it is
*configured* (it is never run), a login counts when its file holds what the CLI needs, and the answer is the
source's name and where it was found, never its value.

Claude Code's documented precedence, first match wins (measured on the bundled CLI 2.1.330 against the scripted
model, whose request log shows what the CLI sent: docs/SDK_NOTES.md "Authentication"):

1. a cloud provider: ``CLAUDE_CODE_USE_BEDROCK`` / ``CLAUDE_CODE_USE_VERTEX`` / ``CLAUDE_CODE_USE_FOUNDRY``
   (its own credentials are the provider SDK's business and cannot be checked offline)
2. ``ANTHROPIC_AUTH_TOKEN``        sent as ``Authorization: Bearer`` (LLM gateways, proxies)
3. ``ANTHROPIC_API_KEY``           sent as ``X-Api-Key``
4. ``apiKeyHelper``                a command in the managed or the user's Claude Code settings that prints a key
5. ``CLAUDE_CODE_OAUTH_TOKEN``     a long-lived token from ``claude setup-token``
6. the CLI's own login (``claude /login``): a claude.ai OAuth token in ``<config dir>/.credentials.json`` (the
   macOS Keychain on macOS), or a Console key (``primaryApiKey``) in the CLI's ``.claude.json``

Variables count from the environment the CLI gets and from the ``env`` block of the managed and user settings
(the CLI applies those too). ``ANTHROPIC_BASE_URL`` alone authenticates nothing: the CLI answers
"Not logged in" without sending a request, so a gateway that needs no key still needs ``ANTHROPIC_AUTH_TOKEN``
set to some value.

A project's settings never count: a project's ``apiKeyHelper`` is project code (the CLI runs it when it reads the
project's settings, measured; the sidecar lets it read them only once the project is trusted: sidecar/sessions.py
``cli_setting_sources``). The user's settings count only when the session loads the ``user`` setting source.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hooks.paths import managed_settings_files

# The switch variables of the third-party providers, with the name shown for them.
PROVIDERS = (
    ("CLAUDE_CODE_USE_BEDROCK", "Amazon Bedrock"),
    ("CLAUDE_CODE_USE_VERTEX", "Google Vertex AI"),
    ("CLAUDE_CODE_USE_FOUNDRY", "Microsoft Foundry"),
)
# The CLI's claude.ai login is usable for the model only with this scope.
INFERENCE_SCOPE = "user:inference"
_MAX_FILE_BYTES = 32 * 1024 * 1024


def cli_truthy(value: str | None) -> bool:
    """A switch as the CLI reads it: ``1``, ``true``, ``yes`` or ``on`` (any case), nothing else."""
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True, slots=True)
class Credential:
    """The source the CLI will authenticate with: its name (``ANTHROPIC_AUTH_TOKEN``, ``apiKeyHelper``, ...) and
    where it was found (``environment``, a settings file's path). Never the value."""

    source: str
    where: str

    def __str__(self) -> str:
        return f"{self.source} ({self.where})"


@dataclass(frozen=True, slots=True)
class ClaudeFiles:
    """The files the CLI reads its user settings and its login from, for one environment."""

    config_dir: Path
    user_settings: Path
    global_config: Path  # .claude.json: $CLAUDE_CONFIG_DIR/.claude.json, else ~/.claude.json
    credentials: Path

    @classmethod
    def for_env(cls, env: Mapping[str, str]) -> ClaudeFiles:
        home = Path(env.get("HOME") or Path.home()).expanduser()
        explicit = (env.get("CLAUDE_CONFIG_DIR") or "").strip()
        config_dir = Path(explicit).expanduser() if explicit else home / ".claude"
        global_config = config_dir / ".claude.json" if explicit else home / ".claude.json"
        return cls(config_dir, config_dir / "settings.json", global_config, config_dir / ".credentials.json")


def managed_value(*keys: str, files: Iterable[Path] | None = None, of_type: type | None = None) -> Any:
    """The value at `keys` (`"sandbox", "enabled"`) in the organization's managed settings, the last file that sets
    it (with a value of `of_type`, when given) winning; None when none does."""
    value = None
    for path in managed_settings_files() if files is None else files:
        node: Any = read_json_object(Path(path))
        for key in keys[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and keys[-1] in node and (of_type is None or isinstance(node[keys[-1]], of_type)):
            value = node[keys[-1]]
    return value


def read_json_object(path: Path) -> dict[str, Any]:
    """The file's JSON object, or {} when it is missing, unreadable, too large or not an object."""
    try:
        if not path.is_file() or path.stat().st_size > _MAX_FILE_BYTES:
            return {}
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _set(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def find_credential(
    env: Mapping[str, str],
    *,
    user_settings: bool = True,
    managed_settings: Iterable[Path] | None = None,
) -> Credential | None:
    """The credential a CLI started with ``env`` would use (the precedence above), or None when it has none.

    ``user_settings``: whether the session's CLI loads the user's Claude Code settings (the ``user`` setting
    source). ``managed_settings``: the managed settings files (default: this platform's).
    """
    files = ClaudeFiles.for_env(env)
    # Highest first: the CLI merges managed settings over the user's.
    settings: list[tuple[str, dict[str, Any]]] = [
        (f"managed settings {path}", read_json_object(path))
        for path in (managed_settings if managed_settings is not None else managed_settings_files())
    ]
    if user_settings:
        settings.append((f"user settings {files.user_settings}", read_json_object(files.user_settings)))

    def variable(name: str) -> tuple[str | None, str]:
        """``name``'s value for the CLI and where it comes from: the highest settings file whose env block sets it
        (the CLI applies those over its environment), else the environment."""
        for where, data in settings:
            block = data.get("env")
            if isinstance(block, dict) and isinstance(block.get(name), str):
                return block[name], f"env of {where}"
        return env.get(name), "environment"

    for switch, provider in PROVIDERS:
        value, where = variable(switch)
        if cli_truthy(value):
            return Credential(f"{provider} ({switch})", where)
    for name in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY"):
        value, where = variable(name)
        if _set(value):
            return Credential(name, where)
    for where, data in settings:
        if _set(data.get("apiKeyHelper")):
            return Credential("apiKeyHelper", where)
    value, where = variable("CLAUDE_CODE_OAUTH_TOKEN")
    if _set(value):
        return Credential("CLAUDE_CODE_OAUTH_TOKEN", where)
    return _login(files)


def _login(files: ClaudeFiles) -> Credential | None:
    """The CLI's own login (``claude /login``), if it left what the CLI needs."""
    oauth = read_json_object(files.credentials).get("claudeAiOauth")
    if isinstance(oauth, dict) and _set(oauth.get("accessToken")):
        scopes = oauth.get("scopes")
        if isinstance(scopes, list) and INFERENCE_SCOPE in scopes:
            return Credential("claude.ai login", str(files.credentials))
    config = read_json_object(files.global_config)
    if _set(config.get("primaryApiKey")):
        return Credential("Console login", str(files.global_config))
    # On macOS the OAuth token is in the Keychain, which is not read here: the account the login recorded stands for it.
    if sys.platform == "darwin" and isinstance(config.get("oauthAccount"), dict):
        return Credential("claude.ai login", f"macOS Keychain (account in {files.global_config})")
    return None


def missing_credential_message(env: Mapping[str, str], *, user_settings: bool = True) -> str:
    """What to tell a user whose real-model session has no credential: every way to give the CLI one."""
    files = ClaudeFiles.for_env(env)
    lead = "no credentials for a real model"
    if _set(env.get("ANTHROPIC_BASE_URL")):
        lead += (" (ANTHROPIC_BASE_URL is set, but the Claude Code CLI does not start with a base URL alone: "
                 "for a gateway that needs no key, set ANTHROPIC_AUTH_TOKEN to any value)")
    helper = f"apiKeyHelper in {files.user_settings} (a command that prints a key)"
    if not user_settings:
        helper += " with the 'user' setting source loaded"
    options = [
        "ANTHROPIC_API_KEY (an Anthropic API key)",
        "ANTHROPIC_AUTH_TOKEN (a bearer token; with ANTHROPIC_BASE_URL for an LLM gateway or proxy)",
        helper,
        "CLAUDE_CODE_OAUTH_TOKEN (from `claude setup-token`)",
        f"a login with `claude /login` (kept in {files.config_dir})",
        "CLAUDE_CODE_USE_BEDROCK=1, CLAUDE_CODE_USE_VERTEX=1 or CLAUDE_CODE_USE_FOUNDRY=1 with that provider's credentials",
    ]
    return f"{lead}: set one of {'; '.join(options)}; or use model 'scripted:<scenario>' (e.g. 'scripted:demo') offline"
