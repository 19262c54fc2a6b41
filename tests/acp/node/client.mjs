// The official ACP TypeScript SDK (@agentclientprotocol/sdk) as a client of `python -m sidecar`.
// Usage: node client.mjs '<json config>'  ->  one JSON summary on stdout (tests/acp/test_node_sdk_client.py reads it).
// Every notification and request the sidecar sends is parsed by the SDK's own zod schemas before a handler runs;
// the answers to our requests are parsed here with the same generated schemas.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream } from "@agentclientprotocol/sdk";
import * as zod from "./node_modules/@agentclientprotocol/sdk/dist/v1/schema/zod.gen.js";

const config = JSON.parse(process.argv[2]);
const summary = { updates: [], extensions: [], permissions: [], errors: [], results: {} };

const child = spawn(config.python, ["-m", "sidecar"], { cwd: config.repo, env: process.env, stdio: ["pipe", "pipe", "pipe"] });
let stderr = "";
child.stderr.on("data", (chunk) => { stderr += chunk.toString(); });
const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

function checked(schema, name, value) {
  const parsed = schema.safeParse(value);
  if (!parsed.success) summary.errors.push({ name, issues: parsed.error.issues });
  return value;
}

const app = client()
  .onRequest("session/request_permission", async ({ params }) => {
    summary.permissions.push(params);
    const optionId = config.permissions.shift() ?? "reject_once";
    return { outcome: { outcome: "selected", optionId } };
  })
  .onNotification("session/update", async ({ params }) => {
    summary.updates.push(params.update);
  })
  .onNotification("*", async ({ method }) => {
    summary.extensions.push(method);
  });

try {
  await app.connectWith(stream, async (agent) => {
    const capabilities = config.events ? { _meta: { orion: { events: true } } } : {};
    summary.results.initialize = checked(zod.zInitializeResponse, "initialize",
      await agent.request("initialize", { protocolVersion: 1, clientCapabilities: capabilities }));
    await agent.request("authenticate", { methodId: "scripted" });
    summary.results.trust = await agent.request("_orion/hooks/trust", { projectDir: config.project });
    const session = checked(zod.zNewSessionResponse, "session/new", await agent.request("session/new", {
      cwd: config.project, mcpServers: [], _meta: { orion: { model: config.model } },
    }));
    summary.results.newSession = session;
    const prompt = [
      { type: "text", text: "run the probe" },
      { type: "image", data: config.png, mimeType: "image/png" },
      { type: "resource_link", name: "README.md", uri: config.readme },
    ];
    summary.results.prompt = checked(zod.zPromptResponse, "session/prompt",
      await agent.request("session/prompt", { sessionId: session.sessionId, prompt }));
    await agent.request("session/set_mode", { sessionId: session.sessionId, modeId: "acceptEdits" });
    summary.results.list = checked(zod.zListSessionsResponse, "session/list", await agent.request("session/list", {}));
  });
} catch (error) {
  summary.errors.push({ name: "exception", message: String(error?.stack ?? error) });
} finally {
  child.stdin.end();
}
await new Promise((resolve) => child.once("exit", resolve));
summary.stderrTail = stderr.slice(-4000);
process.stdout.write(JSON.stringify(summary) + "\n");
