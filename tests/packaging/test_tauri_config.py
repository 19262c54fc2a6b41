"""The Tauri configuration docs/PACKAGING.md tells a desktop app to use (bundle/tauri/tauri.conf.json) is valid for
Tauri 2: checked against the official schema that ships in Tauri's own CLI package (installed by
scripts/bootstrap.sh), and the page shows exactly that file. No Rust toolchain here builds the app itself."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "bundle" / "tauri"
SCHEMA = EXAMPLE / "node_modules" / "@tauri-apps" / "cli" / "config.schema.json"


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft7Validator:
    assert SCHEMA.is_file(), "run scripts/bootstrap.sh: it installs @tauri-apps/cli in bundle/tauri"
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def test_the_example_config_is_valid_for_tauri_2(validator: jsonschema.Draft7Validator) -> None:
    config = json.loads((EXAMPLE / "tauri.conf.json").read_text())
    assert [e.message for e in validator.iter_errors(config)] == []
    # The whole one-dir build goes in as a resource directory, kept whole (the executable needs _internal/ beside it).
    assert config["bundle"]["resources"] == {"sidecar/": "sidecar/"}


def test_the_schema_catches_what_a_wrong_config_would_get_wrong(validator: jsonschema.Draft7Validator) -> None:
    """The check has teeth: a misspelled key and a wrongly typed externalBin are refused."""
    config = json.loads((EXAMPLE / "tauri.conf.json").read_text())
    config["bundle"]["resourcez"] = config["bundle"].pop("resources")
    assert any("resourcez" in e.message for e in validator.iter_errors(config))
    config = json.loads((EXAMPLE / "tauri.conf.json").read_text())
    config["bundle"]["externalBin"] = "binaries/orion-sidecar"
    assert any(list(e.path) == ["bundle", "externalBin"] for e in validator.iter_errors(config))


def test_the_packaging_page_shows_that_very_file() -> None:
    page = (ROOT / "docs" / "PACKAGING.md").read_text()
    blocks = re.findall(r"```jsonc\n// bundle/tauri/tauri.conf.json\n(.*?)```", page, re.S)
    assert len(blocks) == 1, "docs/PACKAGING.md should show bundle/tauri/tauri.conf.json once"
    assert json.loads(blocks[0]) == json.loads((EXAMPLE / "tauri.conf.json").read_text())
