// The official ACP TypeScript SDK (@agentclientprotocol/sdk) as a client of `python -m sidecar`.
// Usage: node client.mjs '<json config>'  ->  one JSON summary on stdout (tests/acp/test_node_sdk_client.py reads it).
// Every notification and request the sidecar sends is parsed by the SDK's own zod schemas before a handler runs;
// the answers to our requests are parsed here with the same generated schemas.
// config.steps: what to do after initialize/authenticate/trust, in order:
//   {do: "new", model, mcpServers?, systemPrompt?, expectError?}
//                                         session/new (the session the next steps use); with expectError the
//                                         refusal is recorded as "session/new(error)" {code, message}
//   {do: "load", sessionId, systemPrompt?} session/load (history arrives as updates)
//   {do: "fork", systemPrompt?}           session/fork of the current session (the fork becomes current)
//   {do: "prompt", text, image?, link?}   session/prompt
//   {do: "cancel", text}                  a prompt, cancelled once its first tool call shows
//   {do: "mode", modeId}                  session/set_mode
//   {do: "list"}                          session/list
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as stable from "@agentclientprotocol/sdk";
import * as unstableSdk from "@agentclientprotocol/sdk/unstable";
import * as zod from "./node_modules/@agentclientprotocol/sdk/dist/v1/schema/zod.gen.js";
// ACP's unstable surface (systemPrompt and its capability): our requests and the sidecar's answers are checked here too.
import * as unstable from "./node_modules/@agentclientprotocol/sdk/dist/v1/unstable/schema/zod.gen.js";

const config = JSON.parse(process.argv[2]);
// config.unstable: the SDK's unstable client, which parses what only the unstable schema has (subagent_update).
const { client, ndJsonStream } = config.unstable ? unstableSdk : stable;
const summary = { updates: [], notifications: [], extensions: [], extensionNotifications: [], permissions: [],
  errors: [], results: [], sessionId: null };

const child = spawn(config.python, ["-m", "sidecar"], { cwd: config.repo, env: process.env, stdio: ["pipe", "pipe", "pipe"] });
let stderr = "";
child.stderr.on("data", (chunk) => { stderr += chunk.toString(); });
const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

function checked(schema, name, value) {
  const parsed = schema.safeParse(value);
  if (!parsed.success) summary.errors.push({ name, issues: parsed.error.issues });
  summary.results.push({ name, value });
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
    summary.notifications.push({ sessionId: params.sessionId, update: params.update });
  })
  .onNotification("*", async ({ method, params }) => {
    summary.extensions.push(method);
    summary.extensionNotifications.push({ method, params });
  });

async function waitFor(predicate, ms) {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

try {
  await app.connectWith(stream, async (agent) => {
    const capabilities = config.events ? { _meta: { orion: { events: true } } } : {};
    if (config.sessionCapabilities) capabilities.session = config.sessionCapabilities;
    if (config.subagents) capabilities.subagents = {};
    const init = checked(zod.zInitializeResponse, "initialize",
      await agent.request("initialize", { protocolVersion: 1, clientCapabilities: capabilities }));
    checked(unstable.zInitializeResponse, "initialize(unstable)", init);
    await agent.request("authenticate", { methodId: "scripted" });
    await agent.request("_orion/hooks/trust", { projectDir: config.project });
    for (const step of config.steps) {
      if (step.do === "new") {
        const orion = { model: step.model, ...(step.allowedTools ? { allowedTools: step.allowedTools } : {}) };
        const params = { cwd: config.project, mcpServers: step.mcpServers ?? [], _meta: { orion } };
        if (step.systemPrompt) params.systemPrompt = step.systemPrompt;
        checked(unstable.zNewSessionRequest, "session/new(request)", params);
        if (step.expectError) {
          try {
            await agent.request("session/new", params);
            summary.errors.push({ name: "session/new", message: "accepted what it should refuse" });
          } catch (error) {
            summary.results.push({ name: "session/new(error)", value: { code: error.code, message: error.message } });
          }
          continue;
        }
        const session = checked(zod.zNewSessionResponse, "session/new", await agent.request("session/new", params));
        summary.sessionId = session.sessionId;
      } else if (step.do === "load") {
        const params = { sessionId: step.sessionId, cwd: config.project, mcpServers: [] };
        if (step.systemPrompt) params.systemPrompt = step.systemPrompt;
        checked(unstable.zLoadSessionRequest, "session/load(request)", params);
        checked(zod.zLoadSessionResponse, "session/load", await agent.request("session/load", params));
        summary.sessionId = step.sessionId;
      } else if (step.do === "fork") {
        const params = { sessionId: summary.sessionId, cwd: config.project, mcpServers: [] };
        if (step.systemPrompt) params.systemPrompt = step.systemPrompt;
        checked(unstable.zForkSessionRequest, "session/fork(request)", params);
        const forked = checked(unstable.zForkSessionResponse, "session/fork", await agent.request("session/fork", params));
        summary.sessionId = forked.sessionId;
      } else if (step.do === "prompt") {
        const prompt = [{ type: "text", text: step.text }];
        if (step.image) prompt.push({ type: "image", data: config.png, mimeType: "image/png" });
        if (step.link) prompt.push({ type: "resource_link", name: "README.md", uri: config.readme });
        checked(zod.zPromptResponse, "session/prompt",
          await agent.request("session/prompt", { sessionId: summary.sessionId, prompt }));
      } else if (step.do === "cancel") {
        const before = summary.updates.length;
        const running = agent.request("session/prompt", { sessionId: summary.sessionId, prompt: [{ type: "text", text: step.text }] });
        await waitFor(() => summary.updates.slice(before).some((u) => u.sessionUpdate === "tool_call"), 60000);
        await new Promise((resolve) => setTimeout(resolve, 300));
        await agent.notify("session/cancel", { sessionId: summary.sessionId });
        checked(zod.zPromptResponse, "session/prompt(cancelled)", await running);
      } else if (step.do === "mode") {
        await agent.request("session/set_mode", { sessionId: summary.sessionId, modeId: step.modeId });
      } else if (step.do === "list") {
        checked(zod.zListSessionsResponse, "session/list", await agent.request("session/list", {}));
      }
    }
  });
} catch (error) {
  summary.errors.push({ name: "exception", message: String(error?.stack ?? error) });
} finally {
  child.stdin.end();
}
await new Promise((resolve) => child.once("exit", resolve));
summary.stderrTail = stderr.slice(-4000);
process.stdout.write(JSON.stringify(summary) + "\n");
