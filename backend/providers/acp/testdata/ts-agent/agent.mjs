// An ACP agent written on the official TypeScript SDK (@agentclientprotocol/sdk), the way the
// SDK's own example agent is written. The acp provider's interoperability test drives it: it
// checks what the client sent, streams text, asks one permission and reports the outcome.
//
// The SDK validates every inbound message against the ACP schema, so a client that did not speak
// ACP as the ecosystem does would fail here, not just in our own Go fixture.
import * as acp from "@agentclientprotocol/sdk";
import { Readable, Writable } from "node:stream";

const sessionId = "ts-session";
let clientSaw = "";

async function prompt(params, client) {
  const say = (text) =>
    client.notify(acp.methods.client.session.update, {
      sessionId: params.sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
    });

  const input = params.prompt.map((block) => (block.type === "text" ? block.text : `[${block.type}]`)).join("");
  await say(`TypeScript agent got "${input}" (${clientSaw}).`);

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
  .onNotification("session/cancel", () => {})
  .connect(stream);
