// An ACP agent written on the official TypeScript SDK (@agentclientprotocol/sdk), the way the
// SDK's own example agent is written. The acp provider's tests and the binary's drive it.
//
// package.json installs two release lines of the SDK side by side under npm aliases (acp-sdk-1,
// acp-sdk-2); ACP_TS_SDK names the one this process runs on (default acp-sdk-1). ACP_TS_AGENT_LOG,
// when set, names a file the agent appends what it was told to, one fact per line.
//
// Without flags it plays the interoperability scenario: it checks what the client sent, streams
// text, announces a tool call, asks one permission and reports the outcome (its first message
// says which SDK version it loaded).
//
// With --continuity none|load|resume|both it is an agent that remembers: each session keeps the
// prompts it was given, and every answer recalls the earlier ones —
//   I remember ["apple"]; now "banana".
// The flag chooses what it offers to continue a session in a new process: nothing,
// session/load (which replays the history as session/updates first), session/resume, or both.
// --sessions <dir> keeps each session in <dir>/<id>.json, where a later process (a restart, or
// another node sharing the directory) finds it, as real agents keep theirs on disk; a session it
// cannot find is answered -32002 "Session not found". Prompts that steer it:
//   crash       — says so, then exits with status 3 in the middle of the turn;
//   hold <file> — says so, then ends the turn when <file> exists (or stop reason cancelled on
//                 session/cancel);
//   ask <command> — asks permission to run <command> (a tool call of kind execute whose rawInput
//                 is {command, cwd}) offering all four option kinds, and acts on the outcome:
//                 an allow_* option runs the command — the one in the answer's
//                 _meta["harness-edge/answer"].rawInput when the caller edited it — and a
//                 reject_* option does not, saying the message the answer carried;
//   anything else is remembered and answered as above.
// --usage (with --continuity) makes it report what each turn consumed, as agents on the unstable
// part of ACP do: a usage_update with the context window and the session's cumulative cost (each
// turn costs 0.0125 USD more; the total is kept with the session, so it goes on across turns,
// processes and nodes), and `usage` on the prompt result: this turn's tokens (input 100 per
// prompt the session has seen, this one included; output 7; cached read 50 after the first).
// The SDK's 2.x line keeps those draft members in its /unstable entry point, which --usage loads;
// 1.7.0's default entry point has them.
//
// The SDK validates every inbound message against the ACP schema, so a client that did not speak
// ACP as the ecosystem does would fail here, not just in our own Go fixture.
import { randomUUID } from "node:crypto";
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";

const sdkPackage = process.env.ACP_TS_SDK ?? "acp-sdk-1";
const reportsUsage = process.argv.includes("--usage");
const acp = reportsUsage
  ? await import(`${sdkPackage}/unstable`).catch(() => import(sdkPackage))
  : await import(sdkPackage);
const sdkVersion = JSON.parse(
  readFileSync(new URL(`./node_modules/${sdkPackage}/package.json`, import.meta.url), "utf8"),
).version;

const argv = process.argv.slice(2);
const flag = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const continuity = flag("--continuity");
const sessionsDir = flag("--sessions");

const record = (fact) => {
  if (process.env.ACP_TS_AGENT_LOG) {
    appendFileSync(process.env.ACP_TS_AGENT_LOG, `${fact}\n`);
  }
};

const update = acp.methods.client.session.update;
const say = (client, sessionId, text, kind = "agent_message_chunk") =>
  client.notify(update, { sessionId, update: { sessionUpdate: kind, content: { type: "text", text } } });
const inputOf = (params) => params.prompt.map((block) => (block.type === "text" ? block.text : `[${block.type}]`)).join("");

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const agent = acp.agent({ name: "harness-edge-ts-agent" }).onRequest("authenticate", () => ({}));
if (continuity === undefined) {
  interop(agent);
} else {
  remembering(agent, continuity);
}
agent.connect(stream);

// The interoperability scenario.
function interop(agent) {
  const sessionId = "ts-session";
  let clientSaw = "";
  agent
    .onRequest("initialize", (ctx) => {
      const caps = ctx.params.clientCapabilities ?? {};
      clientSaw = `protocol ${ctx.params.protocolVersion}, fs.read ${caps.fs?.readTextFile}, fs.write ${caps.fs?.writeTextFile}, terminal ${caps.terminal}`;
      return { protocolVersion: acp.PROTOCOL_VERSION, agentCapabilities: { loadSession: false } };
    })
    .onRequest("session/new", (ctx) => {
      clientSaw += `, mcpServers ${JSON.stringify(ctx.params.mcpServers)}`;
      return { sessionId };
    })
    .onRequest("session/prompt", async (ctx) => {
      const { params, client } = ctx;
      await say(client, params.sessionId, `TypeScript agent on SDK ${sdkVersion} got "${inputOf(params)}" (${clientSaw}).`);
      await client.notify(update, {
        sessionId: params.sessionId,
        update: { sessionUpdate: "tool_call", toolCallId: "ts-call-1", title: "Write greeting.txt", kind: "edit", status: "pending" },
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
      await say(client, params.sessionId, ` Permission outcome: ${answer.outcome.optionId}.`);
      return { stopReason: "end_turn" };
    })
    .onNotification("session/cancel", (ctx) => record(`session/cancel ${ctx.params.sessionId}`));
}

// The agent that remembers.
function remembering(agent, mode) {
  const canLoad = mode === "load" || mode === "both";
  const canResume = mode === "resume" || mode === "both";
  const sessions = new Map(); // id → { cwd, prompts, replies }: the sessions this process serves
  const cancelled = new Map(); // id → resolve of the turn in progress, for session/cancel

  const file = (id) => (sessionsDir && /^[A-Za-z0-9-]+$/.test(id) ? join(sessionsDir, `${id}.json`) : undefined);
  const keep = (id, session) => {
    sessions.set(id, session);
    if (file(id)) writeFileSync(file(id), JSON.stringify(session));
  };
  const stored = (id, cwd) => {
    let session;
    try {
      session = file(id) && JSON.parse(readFileSync(file(id), "utf8"));
    } catch {
      session = undefined;
    }
    if (!session || session.cwd !== cwd) {
      throw new acp.RequestError(-32002, "Session not found", { sessionId: id });
    }
    return session;
  };

  agent
    .onRequest("initialize", () => {
      record(`initialize pid ${process.pid}`);
      const agentCapabilities = { loadSession: canLoad };
      if (canResume) agentCapabilities.sessionCapabilities = { resume: {} };
      return { protocolVersion: acp.PROTOCOL_VERSION, agentCapabilities };
    })
    .onRequest("session/new", (ctx) => {
      const sessionId = `sess-${randomUUID()}`;
      keep(sessionId, { cwd: ctx.params.cwd, prompts: [], replies: [] });
      record(`session/new ${sessionId} cwd ${ctx.params.cwd}`);
      return { sessionId };
    })
    .onRequest("session/prompt", async (ctx) => {
      const { params, client } = ctx;
      const session = sessions.get(params.sessionId);
      if (!session) {
        throw new acp.RequestError(-32002, "Session not found", { sessionId: params.sessionId });
      }
      const input = inputOf(params);
      record(`session/prompt ${params.sessionId} ${input}`);
      if (input === "crash") {
        await say(client, params.sessionId, "crashing");
        process.exit(3);
      }
      if (input.startsWith("ask ")) {
        return await askToRun(client, params.sessionId, input.slice("ask ".length));
      }
      if (input.startsWith("hold ")) {
        await say(client, params.sessionId, "holding");
        const released = input.slice("hold ".length);
        const stop = await new Promise((resolve) => {
          const poll = setInterval(() => {
            if (existsSync(released)) {
              clearInterval(poll);
              resolve("end_turn");
            }
          }, 20);
          cancelled.set(params.sessionId, () => {
            clearInterval(poll);
            resolve("cancelled");
          });
        });
        cancelled.delete(params.sessionId);
        return { stopReason: stop };
      }
      const reply = `I remember ${JSON.stringify(session.prompts)}; now ${JSON.stringify(input)}.`;
      await say(client, params.sessionId, reply);
      const turns = session.prompts.length + 1;
      const cost = Math.round(((session.cost ?? 0) + 0.0125) * 1e6) / 1e6;
      keep(params.sessionId, { ...session, prompts: [...session.prompts, input], replies: [...session.replies, reply], cost });
      if (!reportsUsage) {
        return { stopReason: "end_turn" };
      }
      await client.notify(update, {
        sessionId: params.sessionId,
        update: { sessionUpdate: "usage_update", size: 200000, used: 107 * turns, cost: { amount: cost, currency: "USD" } },
      });
      const tokens = { inputTokens: 100 * turns, outputTokens: 7, totalTokens: 100 * turns + 7 };
      if (turns > 1) tokens.cachedReadTokens = 50;
      return { stopReason: "end_turn", usage: tokens };
    })
    .onNotification("session/cancel", (ctx) => {
      record(`session/cancel ${ctx.params.sessionId}`);
      cancelled.get(ctx.params.sessionId)?.();
    });
  if (canLoad) {
    agent.onRequest("session/load", async (ctx) => {
      const { sessionId, cwd } = ctx.params;
      const session = stored(sessionId, cwd);
      record(`session/load ${sessionId}`);
      for (const [i, prompt] of session.prompts.entries()) {
        await say(ctx.client, sessionId, prompt, "user_message_chunk");
        await say(ctx.client, sessionId, session.replies[i]);
      }
      sessions.set(sessionId, session);
      return {};
    });
  }
  if (canResume) {
    agent.onRequest("session/resume", (ctx) => {
      const { sessionId, cwd } = ctx.params;
      sessions.set(sessionId, stored(sessionId, cwd));
      record(`session/resume ${sessionId}`);
      return {};
    });
  }
}

// askToRun asks permission to run command with the four kinds of option and acts on the answer.
async function askToRun(client, sessionId, command) {
  const toolCallId = `run-${randomUUID()}`;
  const toolCall = { toolCallId, title: `Run ${command}`, kind: "execute", status: "pending", rawInput: { command, cwd: "/tmp" } };
  await client.notify(update, { sessionId, update: { sessionUpdate: "tool_call", ...toolCall } });
  const answer = await client.request(acp.methods.client.session.requestPermission, {
    sessionId,
    toolCall,
    options: [
      { optionId: "allow-once", name: "Run it", kind: "allow_once" },
      { optionId: "allow-always", name: "Always run it", kind: "allow_always" },
      { optionId: "reject-once", name: "Not now", kind: "reject_once" },
      { optionId: "reject-always", name: "Never", kind: "reject_always" },
    ],
  });
  const said = answer._meta?.["harness-edge/answer"] ?? {};
  if (answer.outcome.outcome !== "selected") {
    record(`ask ${command}: cancelled`);
    return { stopReason: "cancelled" };
  }
  const option = answer.outcome.optionId;
  if (option.startsWith("allow")) {
    const ran = said.rawInput?.command ?? command;
    record(`ask ${command}: ${option} ran ${JSON.stringify(ran)}`);
    await say(client, sessionId, `Ran ${JSON.stringify(ran)} (${option}).`);
  } else {
    record(`ask ${command}: ${option} ${JSON.stringify(said.message ?? "")}`);
    await say(client, sessionId, `Did not run ${JSON.stringify(command)} (${option}): ${said.message ?? "no reason given"}.`);
  }
  return { stopReason: "end_turn" };
}
