// An A2A agent on the official JavaScript SDK's server (@a2a-js/sdk, A2A 0.3), for the a2a
// provider's tests. What it does depends on the first word of the user's message:
//
//   echo <words>     streams "Echo:" then " <word>" per word as working status messages, completes
//   slow <n> [ms]    streams "tick 1".."tick n" (default 100 ms apart), completes; cancellable
//   ask              input-required "What is your name?"; the answer gets "Hello, <answer>!"
//   artifact         an artifact report-1 (report.txt), then "Report ready.", completes
//   fail             "Working..." then failed with "Something broke"
//   auth             auth-required
//   count            "Task <n> in this context" (n counts the tasks of the message's contextId)
//
// It listens on 127.0.0.1 (PORT, default 0) and prints "listening <port>" once ready. The card
// advertises PUBLIC_URL (default: its own address) as its JSON-RPC endpoint's base, so that a
// test can put a TCP proxy in front of it.
import express from 'express';
import { randomUUID } from 'node:crypto';
import { AGENT_CARD_PATH } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const textOf = (message) => (message?.parts ?? []).filter((p) => p.kind === 'text').map((p) => p.text).join('');

class TestExecutor {
  cancelled = new Set();
  contexts = new Map(); // contextId → tasks seen
  taskContexts = new Map(); // taskId → contextId, for cancelTask

  async execute(ctx, bus) {
    const { taskId, contextId, userMessage, task } = ctx;
    this.taskContexts.set(taskId, contextId);
    const status = (state, text, final = false) => bus.publish({
      kind: 'status-update', taskId, contextId, final,
      status: {
        state, timestamp: new Date().toISOString(),
        message: text === undefined ? undefined : {
          kind: 'message', role: 'agent', messageId: randomUUID(), taskId, contextId,
          parts: [{ kind: 'text', text }],
        },
      },
    });
    if (task && task.status.state === 'input-required') {
      status('working', `Hello, ${textOf(userMessage)}!`);
      status('completed', undefined, true);
      bus.finished();
      return;
    }
    if (!task) {
      bus.publish({ kind: 'task', id: taskId, contextId, status: { state: 'submitted', timestamp: new Date().toISOString() }, history: [userMessage] });
    }
    const words = textOf(userMessage).trim().split(/\s+/);
    switch (words[0]) {
      case 'slow': {
        const n = Number(words[1] ?? 10);
        const every = Number(words[2] ?? 100);
        for (let i = 1; i <= n; i++) {
          if (this.cancelled.has(taskId)) return; // cancelTask published the final status
          status('working', `tick ${i}${i < n ? '\n' : ''}`);
          await sleep(every);
        }
        if (this.cancelled.has(taskId)) return;
        status('completed', undefined, true);
        break;
      }
      case 'ask':
        status('input-required', 'What is your name?', true);
        break;
      case 'artifact':
        bus.publish({
          kind: 'artifact-update', taskId, contextId,
          artifact: { artifactId: 'report-1', name: 'report.txt', description: 'A short report', parts: [{ kind: 'text', text: 'All good.' }] },
        });
        status('working', 'Report ready.');
        status('completed', undefined, true);
        break;
      case 'fail':
        status('working', 'Working...');
        status('failed', 'Something broke', true);
        break;
      case 'auth':
        status('auth-required', 'Sign in first', true);
        break;
      case 'count': {
        const n = (this.contexts.get(contextId) ?? 0) + 1;
        this.contexts.set(contextId, n);
        status('working', `Task ${n} in this context`);
        status('completed', undefined, true);
        break;
      }
      default: {
        const rest = words[0] === 'echo' ? words.slice(1) : words;
        status('working', 'Echo:');
        for (const w of rest) {
          await sleep(5);
          status('working', ` ${w}`);
        }
        status('completed', undefined, true);
      }
    }
    bus.finished();
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
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const port = server.address().port;
  const base = process.env.PUBLIC_URL ?? `http://127.0.0.1:${port}`;
  const card = {
    name: 'Harness Edge Test Agent',
    description: 'Echo, input, artifact, long-running and failing tasks for the a2a provider tests.',
    protocolVersion: '0.3.0',
    version: '1.0.0',
    url: `${base}/a2a/jsonrpc`,
    preferredTransport: 'JSONRPC',
    capabilities: { streaming: process.env.STREAMING !== 'false', pushNotifications: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'echo', name: 'Echo', description: 'Streams the input back', tags: ['test'] }],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new TestExecutor());
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  console.log(`listening ${port}`);
});
