"""`scripted:<path>` is no file reader: a path that is not a readable scenario file gets a clear error and none of its content.

Attacked through a real `python -m sidecar`: the error the frontend gets, the sidecar's stderr log and its
`log` events must hold no line of the file, whatever the file is (a system file, a symlink dressed as a
scenario, a .yaml whose keys are secrets, a YAML syntax error next to a secret).
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from ipc.errors import RemoteError
from tests.e2e.conftest import open_sidecar

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]

CANARY = "canary-3f9a1c-hunter2"
SECRET_FILE_TEXT = f"root:{CANARY}:20228:0:99999:7:::\ndaemon:*:{CANARY}-2:0:99999:7:::\n"


async def refused(tmp_path: Path, *models: str) -> list[tuple[RemoteError, str]]:
    """session/new with each model in one sidecar; the error each answered and everything logged by then."""
    answers = []
    async with open_sidecar(tmp_path, "notes", trust=False, env={"ORION_LOG_FORWARD_LEVEL": "DEBUG"}) as run:
        for model in models:
            with pytest.raises(RemoteError) as info:
                await run.request("session/new", {"projectDir": str(run.project), "model": model}, timeout=60.0)
            # The sidecar is still serving after the refusal.
            assert await run.request("ping") == {}
            logs = "\n".join(str(e.params) for e in run.events if e.name == "log")
            answers.append((info.value, run.client.stderr_text() + logs))
    return answers


def assert_no_content(error: RemoteError, logged: str, *lines: str) -> None:
    for text in (str(error), repr(error.data), logged):
        for line in lines:
            assert line not in text


def secret_file(tmp_path: Path, name: str, text: str = SECRET_FILE_TEXT) -> Path:
    path = tmp_path / "outside" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


async def test_a_system_file_is_refused_by_kind_and_never_read(tmp_path: Path) -> None:
    target = "/etc/shadow" if os.path.exists("/etc/shadow") else "/etc/passwd"
    [(error, logged)] = await refused(tmp_path, f"scripted:{target}")
    assert error.code == -31006
    assert error.data["reason"] == "notAScenario"
    assert "is not a scenario file" in str(error) and ".yaml, .yml or .json" in str(error)
    first_line = Path(target).read_text(errors="replace").splitlines()[0] if os.access(target, os.R_OK) else "root:"
    assert_no_content(error, logged, first_line, first_line.split(":")[0] + ":")


async def test_a_secret_file_without_a_scenario_suffix_is_refused(tmp_path: Path) -> None:
    path = secret_file(tmp_path, "credentials")
    [(error, logged)] = await refused(tmp_path, f"scripted:{path}")
    assert error.data["reason"] == "notAScenario"
    assert_no_content(error, logged, CANARY)


async def test_a_symlink_dressed_as_a_scenario_is_refused(tmp_path: Path) -> None:
    path = secret_file(tmp_path, "credentials")
    link = tmp_path / "outside" / "innocent.yaml"
    link.symlink_to(path)
    [(error, logged)] = await refused(tmp_path, f"scripted:{link}")
    assert error.data["reason"] == "notAScenario"
    assert_no_content(error, logged, CANARY)


async def test_a_yaml_file_of_secrets_is_invalid_and_not_repeated(tmp_path: Path) -> None:
    # Each line parses as a mapping key: the old loader listed every key (the whole file) in its error.
    path = secret_file(tmp_path, "leak.yaml")
    [(error, logged)] = await refused(tmp_path, f"scripted:{path}")
    assert error.data["reason"] == "invalidScenario"
    assert "unknown key" in str(error) and str(path) in str(error)
    assert_no_content(error, logged, CANARY)


async def test_a_yaml_syntax_error_shows_where_not_what(tmp_path: Path) -> None:
    path = secret_file(tmp_path, "broken.yaml", f"turns: [ok]\n\tpassword: \"{CANARY}\" : :\n")
    [(error, logged)] = await refused(tmp_path, f"scripted:{path}")
    assert error.data["reason"] == "invalidScenario"
    assert "not valid YAML" in str(error) and "line 2" in str(error)
    assert_no_content(error, logged, CANARY)


async def test_missing_unreadable_and_directory_paths_name_the_problem(tmp_path: Path) -> None:
    folder = tmp_path / "dir.yaml"
    folder.mkdir()
    models = [f"scripted:{tmp_path / 'nope.yaml'}", f"scripted:{folder}"]
    if os.geteuid() != 0:  # root reads a mode-000 file all the same
        private = secret_file(tmp_path, "private.yaml", "turns: [x]\n")
        private.chmod(0)
        models.append(f"scripted:{private}")
    answers = await refused(tmp_path, *models)
    (missing, _), (directory, _) = answers[:2]
    assert missing.data["reason"] == "scenarioNotFound" and "not found" in str(missing)
    assert directory.data["reason"] == "notAScenario" and "not a regular file" in str(directory)
    for unreadable, _ in answers[2:]:
        assert unreadable.data["reason"] == "notAScenario" and "not readable" in str(unreadable)


async def test_a_real_scenario_still_starts(tmp_path: Path) -> None:
    good = tmp_path / "fine.yaml"
    good.write_text("turns: [\"fine\"]\n")
    async with open_sidecar(tmp_path, "notes", trust=False) as run:
        with anyio.fail_after(60):
            result = await run.request("session/new", {"projectDir": str(run.project), "model": f"scripted:{good}"},
                                       timeout=60.0)
        await run.end(result["sessionId"])
