"""The `env` blocks of the Claude Code settings a session's CLI reads, as Claude Code gives them to hook processes."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hooks.paths import claude_user_settings_path, managed_settings_files

# Names a hook never gets from a settings file's env, whatever the file: the model's credentials and anything named
# like a secret (Claude Code's own subprocess scrub recognises the same shapes). A hook that needs a token reads it
# from where the user keeps it, not from a block every hook of every source would inherit.
_CREDENTIAL = re.compile(
    r"^(ANTHROPIC_|CLAUDE_CODE_OAUTH|AWS_|GOOGLE_APPLICATION_CREDENTIALS|AZURE_)|TOKEN|SECRET|PASSWORD|PASSWD|"
    r"CREDENTIAL|API_?KEY|PRIVATE_?KEY|(^|_)KEY$", re.IGNORECASE)
# Names that decide which program a hook's command runs or what it loads: never from a project's file (a trusted
# project's env still reaches hooks, but it must not change what the user's own hooks execute).
_LOADER = re.compile(r"^(PATH|LD_.*|DYLD_.*|PYTHON.*|NODE_OPTIONS|NODE_PATH|BASH_ENV|ENV|PERL5.*|RUBY.*|"
                     r"GIT_.*|SHELL|IFS|PS4|PROMPT_COMMAND)$")


def env_block(path: Path) -> dict[str, str]:
    """The `env` block of one settings file (string names and values only); {} when there is none or it cannot be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    block = data.get("env") if isinstance(data, dict) else None
    if not isinstance(block, dict):
        return {}
    return {k: v for k, v in block.items() if isinstance(k, str) and isinstance(v, str) and k and "=" not in k}


def settings_env(sources: list[str], project_dir: Path, managed: list[Path] | None = None) -> dict[str, str]:
    """What the CLI's settings put in its environment (user, then project, then local, then the organization's
    managed settings, which the CLI always reads: a later file wins), as Claude Code's hook processes inherit it;
    `sources` are the setting sources the CLI was let read (the project's only once trusted). Credential-like names
    are left out, and a project's file never sets a loader variable."""
    merged: dict[str, str] = {}
    files: list[tuple[str, Path]] = []
    if "user" in sources:
        files.append(("user", claude_user_settings_path()))
    if "project" in sources:
        files.append(("project", project_dir / ".claude" / "settings.json"))
    if "local" in sources:
        files.append(("local", project_dir / ".claude" / "settings.local.json"))
    files += [("managed", path) for path in (managed_settings_files() if managed is None else managed)]
    for kind, path in files:
        for name, value in env_block(path).items():
            if _CREDENTIAL.search(name) or (kind not in ("user", "managed") and _LOADER.match(name)):
                continue
            merged[name] = value
    return merged

