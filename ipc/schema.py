"""`python -m ipc.schema`: the protocol table as a JSON Schema bundle (for the frontend's TypeScript types) or as the generated part of docs/PROTOCOL.md."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from ipc.errors import ERROR_CODES
from ipc.protocol import PROTOCOL_VERSION
from ipc.registry import ACP_CLIENT_REQUESTS, ACP_EVENTS, ACP_METHODS, CLIENT_REQUESTS, EVENTS, METHODS, MethodSpec

BEGIN = "<!-- BEGIN GENERATED: python -m ipc.schema --markdown -->"
END = "<!-- END GENERATED -->"


def _all_models() -> list[type[BaseModel]]:
    seen: dict[str, type[BaseModel]] = {}
    for spec in [*METHODS.values(), *CLIENT_REQUESTS.values(), *ACP_METHODS.values(), *ACP_CLIENT_REQUESTS.values()]:
        for model in (spec.params, spec.result):
            if model is not None:
                seen.setdefault(model.__name__, model)
    for model in [*EVENTS.values(), *ACP_EVENTS.values()]:
        seen.setdefault(model.__name__, model)
    return list(seen.values())


def bundle() -> dict[str, Any]:
    """One JSON document: every model under $defs (camelCase, as on the wire), and the name tables pointing into it."""
    models = _all_models()
    keys = [(m, mode) for m in models for mode in ("validation", "serialization")]
    refs, top = models_json_schema(keys, by_alias=True, ref_template="#/$defs/{model}")

    # What a sender must provide (validation) differs from what a receiver always gets (serialization, defaults filled in).
    def ref(model: type[BaseModel] | None, mode: str = "serialization") -> dict[str, Any] | None:
        return None if model is None else refs[(model, mode)]

    def method_entry(spec: MethodSpec) -> dict[str, Any]:
        return {"kind": spec.kind, "summary": spec.summary, "params": ref(spec.params, "validation"),
                "result": ref(spec.result) if spec.result is not None else {"type": "null"}}

    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Orion Sidecar protocol",
        "protocolVersion": PROTOCOL_VERSION,
        "methods": {name: method_entry(spec) for name, spec in METHODS.items()},
        "clientRequests": {name: method_entry(spec) for name, spec in CLIENT_REQUESTS.items()},
        "events": {name: ref(model) for name, model in EVENTS.items()},
        # The Agent Client Protocol dialect (an integer protocolVersion at initialize): ACP v1 as the sidecar
        # speaks it; Orion's methods as `_orion/<name>` (params as above), its events as `_orion/<event>` (the
        # event's params above plus OrionEventFields).
        "acp": {
            "protocolVersion": 1,
            "methods": {name: method_entry(spec) for name, spec in ACP_METHODS.items()},
            "clientRequests": {name: method_entry(spec) for name, spec in ACP_CLIENT_REQUESTS.items()},
            "events": {name: ref(model) for name, model in ACP_EVENTS.items()},
        },
        "errors": [{"code": e.code, "name": e.name, "message": e.message, "meaning": e.meaning} for e in ERROR_CODES],
        "$defs": top.get("$defs", {}),
    }


def _type_text(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[-1]
    if "const" in prop:
        return json.dumps(prop["const"])
    if "enum" in prop:
        return " \\| ".join(json.dumps(v) for v in prop["enum"])
    if "anyOf" in prop or "oneOf" in prop:
        return " \\| ".join(_type_text(p, defs) for p in prop.get("anyOf", prop.get("oneOf", [])))
    kind = prop.get("type", "any")
    if kind == "array":
        return f"{_type_text(prop.get('items', {}), defs)}[]"
    if kind == "object" and "additionalProperties" in prop:
        return "object"
    return str(kind)


def _fields_table(name: str, defs: dict[str, Any]) -> list[str]:
    schema = defs[name]
    if not schema.get("properties"):
        if "oneOf" in schema or "anyOf" in schema:
            return [f"One of: {_type_text(schema, defs)}", ""]
        return ["(no fields)", ""]
    required = set(schema.get("required", []))
    lines = ["| field | type | required | notes |", "|---|---|---|---|"]
    for field, prop in schema["properties"].items():
        notes = []
        if "default" in prop:
            notes.append(f"default `{json.dumps(prop['default'])}`")
        for variant in [prop, *prop.get("anyOf", [])]:
            for key in ("pattern", "maxLength", "minimum", "maximum", "description"):
                if key in variant:
                    notes.append(f"{key} `{variant[key]}`")
        lines.append(f"| `{field}` | {_type_text(prop, defs)} | {'yes' if field in required else 'no'} | {'; '.join(notes)} |")
    return [*lines, ""]


def markdown() -> str:
    """The generated reference section of docs/PROTOCOL.md; a test fails when the document drifts from it."""
    doc = bundle()
    defs = doc["$defs"]
    out = [BEGIN, "", f"Protocol version: `{PROTOCOL_VERSION}`", ""]

    def name_of(ref: dict[str, Any] | None) -> str | None:
        return None if ref is None or "$ref" not in ref else ref["$ref"].rsplit("/", 1)[-1]

    def section(title: str, entries: dict[str, Any]) -> None:
        out.extend([f"### {title}", ""])
        for method, entry in entries.items():
            out.extend([f"#### `{method}` ({entry['kind']})", "", entry["summary"], ""])
            params = name_of(entry["params"])
            out.extend([f"Params `{params}`:", "", *_fields_table(params, defs)])
            result = name_of(entry["result"])
            if entry["kind"] == "request":
                if result is None:
                    out.extend(["Result: `null`", ""])
                else:
                    out.extend([f"Result `{result}`:", "", *_fields_table(result, defs)])

    def events(title: str, entries: dict[str, Any]) -> None:
        out.extend([f"### {title}", ""])
        for event, ref in entries.items():
            model = name_of(ref)
            out.extend([f"#### `{event}`", "", f"Params `{model}`:", "", *_fields_table(model, defs)])

    acp = doc["acp"]
    out.extend(["## ACP dialect (`protocolVersion: 1`)", ""])
    section("ACP methods (client → sidecar)", acp["methods"])
    section("ACP requests (sidecar → client)", acp["clientRequests"])
    events("ACP notifications (sidecar → client)", acp["events"])
    out.extend(["## Orion's first dialect (`protocolVersion: \"" + PROTOCOL_VERSION + "\"`)", ""])
    section("Methods (frontend → sidecar)", doc["methods"])
    section("Requests (sidecar → frontend)", doc["clientRequests"])
    events("Events (sidecar → frontend notifications)", doc["events"])
    out.extend(["### Shared types", ""])
    every = [*doc["methods"].values(), *doc["clientRequests"].values(), *acp["methods"].values(),
             *acp["clientRequests"].values()]
    listed = {name_of(e["params"]) for e in every}
    listed |= {name_of(e["result"]) for e in every}
    listed |= {name_of(r) for r in [*doc["events"].values(), *acp["events"].values()]}
    for model in sorted(set(defs) - listed):
        out.extend([f"#### `{model}`", "", *_fields_table(model, defs)])
    out.extend(["### Error codes", "", "| code | name | message | when |", "|---|---|---|---|"])
    out.extend(f"| {e['code']} | {e['name']} | {e['message']} | {e['meaning']} |" for e in doc["errors"])
    out.extend(["", END])
    return "\n".join(out) + "\n"


def generated_section(document: str) -> str:
    """The part of a document between the generated-section markers, markers included."""
    start, end = document.index(BEGIN), document.index(END) + len(END)
    return document[start:end] + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ipc.schema", description=__doc__)
    parser.add_argument("--markdown", action="store_true", help="print the generated section of docs/PROTOCOL.md instead")
    parser.add_argument("--write", metavar="PROTOCOL_MD", help="replace the generated section of this file in place")
    args = parser.parse_args(argv)
    if args.write:
        with open(args.write, encoding="utf-8") as fh:
            document = fh.read()
        updated = document.replace(generated_section(document).rstrip("\n"), markdown().rstrip("\n"))
        with open(args.write, "w", encoding="utf-8") as fh:
            fh.write(updated)
        return 0
    sys.stdout.write(markdown() if args.markdown else json.dumps(bundle(), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
