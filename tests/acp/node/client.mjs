// The official ACP TypeScript SDK (@agentclientprotocol/sdk) as a client of `python -m sidecar`.
// Usage: node client.mjs '<json config>'  ->  one JSON summary on stdout (tests/acp/test_node_sdk_client.py reads it).
// Every notification and request the sidecar sends is parsed by the SDK's own zod schemas before a handler runs;
// the answers to our requests are parsed here with the same generated schemas.
// config.steps: what to do after initialize/authenticate/trust, in order:
//   {do: "new", model, mcpServers?}       session/new (the session the next steps use)
//   {do: "load", sessionId}               session/load (history arrives as updates)
//   {do: "prompt", text, image?, link?}   session/prompt
//   {do: "cancel", text}                  a prompt, cancelled once its first tool call shows
//   {do: "mode", modeId}                  session/set_mode
//   {do: "list"}                          session/list
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream } from "@agentclientprotocol/sdk";
import * as zod from "./node_modules/@agentclientprotocol/sdk/dist/v1/schema/zod.gen.js";

const config = JSON.parse(process.argv[2]);
const summary = { updates: [], extensions: [], permissions: [], errors: [], results: [], sessionId: null };

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
  })
  .onNotification("*", async ({ method }) => {
    summary.extensions.push(method);
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
    checked(zod.zInitializeResponse, "initialize",
      await agent.request("initialize", { protocolVersion: 1, clientCapabilities: capabilities }));
    await agent.request("authenticate", { methodId: "scripted" });
    await agent.request("_orion/hooks/trust", { projectDir: config.project });
    for (const step of config.steps) {
      if (step.do === "new") {
        const session = checked(zod.zNewSessionResponse, "session/new", await agent.request("session/new", {
          cwd: config.project, mcpServers: step.mcpServers ?? [], _meta: { orion: { model: step.model } },
        }));
        summary.sessionId = session.sessionId;
      } else if (step.do === "load") {
        checked(zod.zLoadSessionResponse, "session/load", await agent.request("session/load", {
          sessionId: step.sessionId, cwd: config.project, mcpServers: [],
        }));
        summary.sessionId = step.sessionId;
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
