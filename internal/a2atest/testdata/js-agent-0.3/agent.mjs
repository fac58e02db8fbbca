// An A2A agent on the official JavaScript SDK's server, @a2a-js/sdk 0.3 (A2A 0.3), for the a2a
// provider's tests. What it does with each input is ../scenarios.mjs.
//
// It listens on 127.0.0.1 (PORT, default 0) and prints "listening <port>" once ready. The card
// advertises PUBLIC_URL (default: its own address) as its JSON-RPC endpoint's base, so that a
// test can put a TCP proxy in front of it. Under /polled the same agent is served as an agent
// that does not stream (its card says streaming: false).
import express from 'express';
import { randomUUID } from 'node:crypto';
import { AGENT_CARD_PATH } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { answer, recordRequests, run } from '../scenarios.mjs';

const textOf = (message) => (message?.parts ?? []).filter((p) => p.kind === 'text').map((p) => p.text).join('');
// The states after which a 0.3 stream ends (its status update says final).
const finalStates = new Set(['completed', 'failed', 'canceled', 'rejected', 'input-required', 'auth-required']);

class TestExecutor {
  cancelled = new Set();
  taskContexts = new Map(); // taskId → contextId, for cancelTask

  async execute(ctx, bus) {
    const { taskId, contextId, userMessage, task } = ctx;
    this.taskContexts.set(taskId, contextId);
    const io = {
      cancelled: () => this.cancelled.has(taskId),
      status: (state, text, metadata) => bus.publish({
        kind: 'status-update', taskId, contextId, final: finalStates.has(state), metadata,
        status: {
          state, timestamp: new Date().toISOString(),
          message: text === undefined ? undefined : {
            kind: 'message', role: 'agent', messageId: randomUUID(), taskId, contextId,
            parts: [{ kind: 'text', text }],
          },
        },
      }),
      artifact: ({ text, ...artifact }) => bus.publish({
        kind: 'artifact-update', taskId, contextId, artifact: { ...artifact, parts: [{ kind: 'text', text }] },
      }),
    };
    if (task && task.status.state === 'input-required') {
      answer(textOf(userMessage), io);
    } else {
      if (!task) {
        bus.publish({ kind: 'task', id: taskId, contextId, status: { state: 'submitted', timestamp: new Date().toISOString() }, history: [userMessage] });
      }
      await run(textOf(userMessage), contextId, io);
    }
    if (!io.cancelled()) bus.finished(); // else cancelTask finished it
  }

  async cancelTask(taskId, bus) {
    this.cancelled.add(taskId);
    bus.publish({
      kind: 'status-update', taskId, contextId: this.taskContexts.get(taskId) ?? '', final: true,
      status: { state: 'canceled', timestamp: new Date().toISOString() },
    });
    bus.finished();
  }
}

const app = express();
recordRequests(app, express);
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const port = server.address().port;
  const base = process.env.PUBLIC_URL ?? `http://127.0.0.1:${port}`;
  const tasks = new InMemoryTaskStore();
  const executor = new TestExecutor();
  for (const [prefix, streaming] of [['', true], ['/polled', false]]) {
    const card = {
      name: 'Harness Edge Test Agent',
      description: 'Echo, input, artifact, long-running and failing tasks for the a2a provider tests.',
      protocolVersion: '0.3.0',
      version: '1.0.0',
      url: `${base}${prefix}/a2a/jsonrpc`,
      preferredTransport: 'JSONRPC',
      capabilities: { streaming, pushNotifications: false },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [{ id: 'echo', name: 'Echo', description: 'Streams the input back', tags: ['test'] }],
    };
    const handler = new DefaultRequestHandler(card, tasks, executor);
    app.use(`${prefix}/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
    app.use(`${prefix}/a2a/jsonrpc`, jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  }
  console.log(`listening ${port}`);
});
