// An ACP agent written on the official TypeScript SDK (@agentclientprotocol/sdk), the way the
// SDK's own example agent is written. The acp provider's interoperability test drives it: it
// checks what the client sent, streams text, announces a tool call, asks one permission and
// reports the outcome.
//
// package.json installs two release lines of the SDK side by side under npm aliases (acp-sdk-1,
// acp-sdk-2); ACP_TS_SDK names the one this process runs on (default acp-sdk-1), and the agent
// says which version it loaded in its first message. ACP_TS_AGENT_LOG, when set, names a file
// the agent appends what it was told to, one fact per line.
//
// The SDK validates every inbound message against the ACP schema, so a client that did not speak
// ACP as the ecosystem does would fail here, not just in our own Go fixture.
import { appendFileSync, readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";

const sdkPackage = process.env.ACP_TS_SDK ?? "acp-sdk-1";
const acp = await import(sdkPackage);
const sdkVersion = JSON.parse(
  readFileSync(new URL(`./node_modules/${sdkPackage}/package.json`, import.meta.url), "utf8"),
).version;

const record = (fact) => {
  if (process.env.ACP_TS_AGENT_LOG) {
    appendFileSync(process.env.ACP_TS_AGENT_LOG, `${fact}\n`);
  }
};

const sessionId = "ts-session";
let clientSaw = "";

async function prompt(params, client) {
  const say = (text) =>
    client.notify(acp.methods.client.session.update, {
      sessionId: params.sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
    });

  const input = params.prompt.map((block) => (block.type === "text" ? block.text : `[${block.type}]`)).join("");
  await say(`TypeScript agent on SDK ${sdkVersion} got "${input}" (${clientSaw}).`);

  await client.notify(acp.methods.client.session.update, {
    sessionId: params.sessionId,
    update: {
      sessionUpdate: "tool_call",
      toolCallId: "ts-call-1",
      title: "Write greeting.txt",
      kind: "edit",
      status: "pending",
    },
  });
  const answer = await client.request(acp.methods.client.session.requestPermission, {
    sessionId: params.sessionId,
    toolCall: { toolCallId: "ts-call-1", title: "Write greeting.txt", kind: "edit", status: "pending" },
    options: [
      { optionId: "allow", name: "Allow this change", kind: "allow_once" },
      { optionId: "allow-always", name: "Always allow", kind: "allow_always" },
      { optionId: "reject", name: "Skip this change", kind: "reject_once" },
    ],
  });
  record(`permission ${answer.outcome.outcome === "selected" ? answer.outcome.optionId : answer.outcome.outcome}`);
  if (answer.outcome.outcome === "cancelled") {
    return { stopReason: "cancelled" };
  }
  await say(` Permission outcome: ${answer.outcome.optionId}.`);
  return { stopReason: "end_turn" };
}

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
acp
  .agent({ name: "harness-edge-ts-agent" })
  .onRequest("initialize", (ctx) => {
    const caps = ctx.params.clientCapabilities ?? {};
    clientSaw = `protocol ${ctx.params.protocolVersion}, fs.read ${caps.fs?.readTextFile}, fs.write ${caps.fs?.writeTextFile}, terminal ${caps.terminal}`;
    return { protocolVersion: acp.PROTOCOL_VERSION, agentCapabilities: { loadSession: false } };
  })
  .onRequest("session/new", (ctx) => {
    clientSaw += `, mcpServers ${JSON.stringify(ctx.params.mcpServers)}`;
    return { sessionId };
  })
  .onRequest("authenticate", () => ({}))
  .onRequest("session/prompt", (ctx) => prompt(ctx.params, ctx.client))
  .onNotification("session/cancel", (ctx) => record(`session/cancel ${ctx.params.sessionId}`))
  .connect(stream);
