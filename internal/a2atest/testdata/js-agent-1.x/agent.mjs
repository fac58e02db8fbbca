// An A2A agent on the official JavaScript SDK's server, @a2a-js/sdk 1.x (A2A 1.0), for the a2a
// provider's tests. What it does with each input is ../scenarios.mjs.
//
// LEGACY_COMPAT=true switches on the SDK's A2A 0.3 compatibility (off by default in the SDK): the
// card then lists the JSON-RPC endpoint twice in supportedInterfaces, as protocol versions 1.0 and
// 0.3, and a request without `A2A-Version: 1.0` is served as A2A 0.3. Without it the agent speaks
// A2A 1.0 only, as an agent built on the SDK's defaults does.
//
// It listens on 127.0.0.1 (PORT, default 0) and prints "listening <port>" once ready. The card
// advertises PUBLIC_URL (default: its own address) as its JSON-RPC endpoint's base, so that a
// test can put a TCP proxy in front of it. Under /polled the same agent is served as an agent
// that does not stream (its card says streaming: false).
import express from 'express';
import { randomUUID } from 'node:crypto';
import { AGENT_CARD_PATH, Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { answer, recordRequests, run } from '../scenarios.mjs';

const legacyCompat = { enabled: process.env.LEGACY_COMPAT === 'true' };
const states = {
  working: TaskState.TASK_STATE_WORKING,
  completed: TaskState.TASK_STATE_COMPLETED,
  'input-required': TaskState.TASK_STATE_INPUT_REQUIRED,
  failed: TaskState.TASK_STATE_FAILED,
  'auth-required': TaskState.TASK_STATE_AUTH_REQUIRED,
};
const textPart = (text) => ({ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' });
const textOf = (message) => (message?.parts ?? []).filter((p) => p.content?.$case === 'text').map((p) => p.content.value).join('');
const now = () => new Date().toISOString();

class TestExecutor {
  cancelled = new Set();
  taskContexts = new Map(); // taskId → contextId, for cancelTask

  async execute(ctx, bus) {
    const { taskId, contextId, userMessage, task } = ctx;
    this.taskContexts.set(taskId, contextId);
    const status = (state, text, metadata) => AgentEvent.statusUpdate({
      taskId, contextId, metadata,
      status: {
        state: states[state], timestamp: now(),
        message: text === undefined ? undefined : {
          messageId: randomUUID(), role: Role.ROLE_AGENT, taskId, contextId, parts: [textPart(text)],
          metadata: undefined, extensions: [], referenceTaskIds: [],
        },
      },
    });
    const io = {
      cancelled: () => this.cancelled.has(taskId),
      status: (state, text, metadata) => bus.publish(status(state, text, metadata)),
      artifact: ({ text, ...artifact }) => bus.publish(AgentEvent.artifactUpdate({
        taskId, contextId, append: false, lastChunk: true, metadata: undefined,
        artifact: { ...artifact, parts: [textPart(text)], metadata: undefined, extensions: [] },
      })),
    };
    // A2A 1.0 servers in this SDK want a task (or a message) as the first event of every turn,
    // the follow-up of input-required included.
    const answering = task && task.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED;
    bus.publish(AgentEvent.task(task ?? {
      id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: now() },
      artifacts: [], history: [userMessage], metadata: undefined,
    }));
    if (answering) {
      answer(textOf(userMessage), io);
    } else {
      await run(textOf(userMessage), contextId, io);
    }
    if (!io.cancelled()) bus.finished(); // else cancelTask finished it
  }

  async cancelTask(taskId, bus) {
    this.cancelled.add(taskId);
    bus.publish(AgentEvent.statusUpdate({
      taskId, contextId: this.taskContexts.get(taskId) ?? '', metadata: undefined,
      status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: now() },
    }));
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
    const endpoint = `${base}${prefix}/a2a/jsonrpc`;
    const supportedInterfaces = [{ url: endpoint, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }];
    if (legacyCompat.enabled) {
      supportedInterfaces.push({ url: endpoint, protocolBinding: 'JSONRPC', protocolVersion: '0.3', tenant: '' });
    }
    const card = {
      name: 'Harness Edge Test Agent',
      description: 'Echo, input, artifact, long-running and failing tasks for the a2a provider tests.',
      supportedInterfaces,
      provider: undefined,
      version: '1.0.0',
      capabilities: { streaming, pushNotifications: false, extensions: [] },
      securitySchemes: {},
      securityRequirements: [],
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [{ id: 'echo', name: 'Echo', description: 'Streams the input back', tags: ['test'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
      signatures: [],
    };
    const handler = new DefaultRequestHandler(card, tasks, executor);
    app.use(`${prefix}/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler, legacyCompat }));
    app.use(`${prefix}/a2a/jsonrpc`, jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat }));
  }
  console.log(`listening ${port}`);
});
