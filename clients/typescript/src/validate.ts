// Checks what the sidecar sends against the JSON Schema generated from its models (ajv, strict mode).
import Ajv2020 from "ajv/dist/2020.js";
import type { ValidateFunction } from "ajv";
import schema from "./generated/protocol.schema.json" with { type: "json" };
import { NOTIFICATION_SCHEMAS, REQUEST_SCHEMAS, RESULT_SCHEMAS } from "./generated/schemas.js";
import type { ReceivedMessage } from "./client.js";

export interface Violation {
  message: ReceivedMessage;
  schema: string;
  errors: string[];
}

/** A checker for `OrionClientOptions.onReceive`: every message with a schema is validated; problems are collected. */
export function createValidator(): { check: (message: ReceivedMessage) => void; violations: Violation[]; checked: number } {
  const ajv = new Ajv2020.default({ strict: true, allErrors: true });
  ajv.addSchema(schema);
  const compiled = new Map<string, ValidateFunction>();
  const validator = (name: string): ValidateFunction => {
    let fn = compiled.get(name);
    if (fn === undefined) {
      fn = ajv.getSchema(`urn:orion:sidecar-protocol#/$defs/${name}`);
      if (fn === undefined) throw new Error(`no schema ${name}`);
      compiled.set(name, fn);
    }
    return fn;
  };
  const state = { violations: [] as Violation[], checked: 0 };
  const check = (message: ReceivedMessage): void => {
    const names = message.kind === "result" ? [RESULT_SCHEMAS[message.method]]
      : message.kind === "notification" ? [...(NOTIFICATION_SCHEMAS[message.method] ?? [])]
      : message.kind === "request" ? [REQUEST_SCHEMAS[message.method]]
      : [];
    for (const name of names) {
      if (name === undefined) continue;
      const fn = validator(name);
      state.checked += 1;
      if (!fn(message.payload)) {
        state.violations.push({ message, schema: name,
          errors: (fn.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? ""}`) });
      }
    }
  };
  return { check, get violations() { return state.violations; }, get checked() { return state.checked; } };
}
