"""The schema bundle covers the whole table, and docs/PROTOCOL.md matches the models."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ipc.registry import CLIENT_REQUESTS, EVENTS, METHODS
from ipc.schema import generated_section, markdown

ROOT = Path(__file__).resolve().parents[2]


def test_protocol_md_matches_the_models():
    document = (ROOT / "docs" / "PROTOCOL.md").read_text(encoding="utf-8")
    assert generated_section(document) == markdown(), (
        "docs/PROTOCOL.md drifted from the models: run `python -m ipc.schema --write docs/PROTOCOL.md`")


def test_every_name_and_error_code_is_documented():
    document = (ROOT / "docs" / "PROTOCOL.md").read_text(encoding="utf-8")
    for name in [*METHODS, *CLIENT_REQUESTS, *EVENTS]:
        assert f"`{name}`" in document
    for code in (-32700, -32600, -32601, -32602, -32603, -32000, -32002, -32800, -31001, -31002, -31003, -31004, -31005, -31006):
        assert f"| {code} |" in document


def test_python_m_ipc_schema_prints_a_bundle_with_resolvable_refs():
    out = subprocess.run([sys.executable, "-m", "ipc.schema"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    bundle = json.loads(out)
    assert set(bundle["methods"]) == set(METHODS)
    assert set(bundle["events"]) == set(EVENTS)
    assert set(bundle["clientRequests"]) == {"session/request_permission", "elicitation/create"}
    refs = []

    def walk(node):
        if isinstance(node, dict):
            if "$ref" in node:
                refs.append(node["$ref"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(bundle)
    assert refs
    for ref in refs:
        assert ref.rsplit("/", 1)[-1] in bundle["$defs"], ref
    props = bundle["$defs"]["SessionNewParams"]["properties"]
    assert "projectDir" in props and "project_dir" not in props  # camelCase, as on the wire
