// The generated JSON Schema compiles in ajv's strict mode, every definition of it, and rejects what the wire never
// carries: it is usable by any frontend that validates, not only by this client.
import { test } from "node:test";
import assert from "node:assert/strict";
import Ajv2020 from "ajv/dist/2020.js";
import schema from "../src/generated/protocol.schema.json" with { type: "json" };
import { NOTIFICATION_SCHEMAS, REQUEST_SCHEMAS, RESULT_SCHEMAS } from "../src/generated/schemas.js";

test("every definition compiles under ajv strict mode", () => {
  const ajv = new Ajv2020.default({ strict: true, allErrors: true });
  ajv.addSchema(schema);
  const names = Object.keys(schema.$defs);
  assert.ok(names.length > 50, `${names.length} definitions`);
  for (const name of names) {
    assert.ok(ajv.getSchema(`urn:orion:sidecar-protocol#/$defs/${name}`), name);
  }
  for (const name of [...Object.values(RESULT_SCHEMAS), ...Object.values(REQUEST_SCHEMAS), ...Object.values(NOTIFICATION_SCHEMAS).flat()]) {
    assert.ok(names.includes(name), `${name} is named by a method table but not defined`);
  }
});

test("the schema rejects what the sidecar never sends", () => {
  const ajv = new Ajv2020.default({ strict: true });
  ajv.addSchema(schema);
  const update = ajv.getSchema("urn:orion:sidecar-protocol#/$defs/AcpSessionNotification");
  assert.ok(update);
  assert.equal(update({ sessionId: "s", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } } }), true);
  assert.equal(update({ sessionId: "s", update: { sessionUpdate: "no_such_update" } }), false);
  const hook = ajv.getSchema("urn:orion:sidecar-protocol#/$defs/HookResponseEvent");
  assert.ok(hook);
  assert.equal(hook({ sessionId: "s", executionId: "e", hookId: "h", hookName: "n", hookType: "command", source: "project",
    event: "PreToolUse", outcome: "maybe", durationMs: 1, failClosed: false, background: false, enforced: false }), false);
});
