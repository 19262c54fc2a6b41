// The client against the real sidecar (`python -m sidecar`, the scripted model, the real CLI): a session with a
// project command hook and a permission round trip, every received message checked against the generated schema.
// Run by tests/clients/test_typescript_client.py (ORION_PYTHON, ORION_REPO) or alone with `npm test`: then the
// repository is the one this file is in and the sidecar runs on its .venv. Either way the sidecar keeps its user
// files (HOME, Orion's data and settings) in the test's temporary directory.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import assert from "node:assert/strict";
import { OrionClient, fromChildProcess, type PermissionRequest } from "../src/index.js";
import type { AcpEvents, SessionUpdate } from "../src/index.js";
import { createValidator } from "../src/validate.js";

// Compiled to <repo>/clients/typescript/dist/test/.
const repo = process.env["ORION_REPO"] ?? resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..");

/** The Python that runs the sidecar: ORION_PYTHON, else the repository's .venv (made by `./dev test`). */
function sidecarPython(): string {
  const given = process.env["ORION_PYTHON"];
  if (given) return given;
  const venv = join(repo, ".venv", "bin", "python");
  if (!existsSync(venv)) {
    throw new Error(`no Python for the sidecar: ${venv} does not exist; run ./dev test once (it makes the .venv), ` +
      "or set ORION_PYTHON to a Python with the sidecar installed");
  }
  return venv;
}

test("a session through the typed client: hooks, permission, every message valid", { timeout: 120_000 }, async () => {
  const work = mkdtempSync(join(tmpdir(), "orion-ts-"));
  const project = join(work, "project");
  mkdirSync(join(project, ".claude"), { recursive: true });
  writeFileSync(join(project, ".claude", "settings.json"), JSON.stringify({ hooks: { PreToolUse: [{ matcher: "Bash", hooks: [
    { type: "command", name: "ts-audit", command: "echo \"$HOOK_EVENT\" >> \"$CLAUDE_PROJECT_DIR\"/audit.log" },
  ] }] } }));
  const scenario = join(work, "turn.json");
  writeFileSync(scenario, JSON.stringify({ turns: [[
    { tool_use: { name: "Bash", input: { command: "echo from-bash > bash.txt" } } },
    { tool_use: { name: "Write", input: { file_path: join(project, "written.txt"), content: "from-write\n" } } },
  ], "Both done."] }));

  const home = join(work, "home");
  const env = { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, ".config"),
    ORION_DATA_DIR: join(home, ".local", "share", "orion"),
    ORION_USER_SETTINGS: join(home, ".config", "orion", "settings.json"),
    ORION_CLAUDE_USER_SETTINGS: join(home, ".claude", "settings.json") };
  const child = spawn(sidecarPython(), ["-m", "sidecar"], { cwd: repo, env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => { stderr += chunk.toString(); });
  const validator = createValidator();
  const asked: PermissionRequest[] = [];
  const orion = OrionClient.connect(fromChildProcess(child), {
    onReceive: validator.check,
    onPermission: (request) => {
      asked.push(request);
      return { outcome: { outcome: "selected", optionId: "allow_once" } };
    },
  });
  const responses: AcpEvents["_orion/hook_response"][] = [];
  const updates: SessionUpdate[] = [];
  orion.on("_orion/hook_response", (event) => { responses.push(event); });
  const unsubscribe = orion.on("session/update", (event) => { updates.push(event.update); });
  try {
    const init = await orion.initialize(true);
    assert.equal(init.protocolVersion, 1);
    await orion.request("authenticate", { methodId: "scripted" });
    await orion.request("_orion/hooks/trust", { projectDir: project });
    const session = await orion.request("session/new", {
      cwd: project, mcpServers: [], _meta: { orion: { model: `scripted:${scenario}`, allowedTools: ["Bash"] } },
    });
    const result = await orion.request("session/prompt", {
      sessionId: session.sessionId, prompt: [{ type: "text", text: "Run it, then write it." }],
    });
    assert.equal(result.stopReason, "end_turn", stderr.slice(-2000));
    unsubscribe();

    // The project's command hook ran on the Bash call, and its response reached the subscriber, typed.
    const audit = responses.filter((r) => r.hookName === "ts-audit");
    assert.equal(audit.length, 1, JSON.stringify(responses.map((r) => r.hookName)));
    assert.equal(audit[0]?.outcome, "success");
    assert.equal(typeof audit[0]?.seq, "number");
    assert.equal(readFileSync(join(project, "audit.log"), "utf8").trim(), "PreToolUse");
    // The permission callback decided the Write (Bash was allowed up front).
    assert.equal(asked.length, 1, JSON.stringify(asked));
    assert.equal(asked[0]?.toolCall.title?.includes("written.txt") || JSON.stringify(asked[0]).includes("written.txt"), true);
    assert.equal(readFileSync(join(project, "written.txt"), "utf8"), "from-write\n");
    const kinds = new Set(updates.map((u) => u.sessionUpdate));
    for (const kind of ["tool_call", "tool_call_update", "agent_message_chunk"] as const) assert.ok(kinds.has(kind), kind);

    // Every message received had a schema and matched it (ajv strict).
    assert.deepEqual(validator.violations, []);
    assert.ok(validator.checked >= 10, `only ${validator.checked} messages checked`);
  } finally {
    orion.close();
    child.kill();
  }
});

test("a misspelled option or a wrong type does not compile", () => {
  // Compile-time checks: tsc fails the build when an @ts-expect-error line has no error.
  const check = (orion: OrionClient) => {
    // @ts-expect-error: `modle` is not an Orion session option
    void orion.request("session/new", { cwd: "/p", mcpServers: [], _meta: { orion: { modle: "scripted:demo" } } });
    // @ts-expect-error: permissionMode is a closed set
    void orion.request("session/new", { cwd: "/p", _meta: { orion: { permissionMode: "yolo" } } });
    // @ts-expect-error: an unknown method
    void orion.request("session/nwe", {});
    orion.on("session/update", (event) => {
      if (event.update.sessionUpdate === "tool_call_update") {
        // Discriminated: a tool_call_update has toolCallId.
        const id: string = event.update.toolCallId;
        void id;
      }
    });
  };
  assert.equal(typeof check, "function");
});
