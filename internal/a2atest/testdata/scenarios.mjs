// What the A2A test agents do, whichever @a2a-js/sdk line serves them (js-agent-0.3 speaks A2A
// 0.3, js-agent-1.x A2A 1.0): one definition of the behaviour the a2a provider's tests expect, so
// every agent build answers each input alike. What the agent does depends on the first word of
// the user's message:
//
//   echo <words>     streams "Echo:" then " <word>" per word as working status messages, completes
//   slow <n> [ms]    streams "tick 1".."tick n" (default 100 ms apart), completes; cancellable
//   ask              input-required "What is your name?"; the answer gets "Hello, <answer>!"
//   artifact         an artifact report-1 (report.txt), then "Report ready.", completes
//   fail             "Working..." then failed with "Something broke"
//   auth             auth-required "Sign in first"
//   count            "Task <n> in this context" (n counts the tasks of the message's contextId)
//   usage <n>        n working updates "step <i>", each reporting the task's usage so far in its
//                    metadata (docs/usage.md: 10 input and 2 output tokens, 0.001 USD per step)
//
// An agent adapts `io` to its SDK: status(state, text?) publishes a status update (states are
// named as in A2A 0.3: working, completed, input-required, failed, auth-required) whose message,
// if text is given, is one text part; artifact(a) publishes an artifact of one text part;
// cancelled() tells whether the task was cancelled meanwhile. status's third argument is the
// update's metadata.

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const contexts = new Map(); // contextId → tasks seen (count)

// run plays the scenario the user's first message names.
export async function run(text, contextId, io) {
  const words = text.trim().split(/\s+/);
  switch (words[0]) {
    case 'slow': {
      const n = Number(words[1] ?? 10);
      const every = Number(words[2] ?? 100);
      for (let i = 1; i <= n; i++) {
        if (io.cancelled()) return; // the cancellation published the final status
        io.status('working', `tick ${i}${i < n ? '\n' : ''}`);
        await sleep(every);
      }
      if (io.cancelled()) return;
      io.status('completed');
      return;
    }
    case 'ask':
      io.status('input-required', 'What is your name?');
      return;
    case 'artifact':
      io.artifact({ artifactId: 'report-1', name: 'report.txt', description: 'A short report', text: 'All good.' });
      io.status('working', 'Report ready.');
      io.status('completed');
      return;
    case 'fail':
      io.status('working', 'Working...');
      io.status('failed', 'Something broke');
      return;
    case 'auth':
      io.status('auth-required', 'Sign in first');
      return;
    case 'usage': {
      const n = Number(words[1] ?? 3);
      for (let i = 1; i <= n; i++) {
        const usage = { inputTokens: 10 * i, outputTokens: 2 * i, cost: { amount: Math.round(i * 1000) / 1e6, currency: 'USD' } };
        io.status('working', `step ${i}\n`, { usage });
        await sleep(5);
      }
      io.status('completed');
      return;
    }
    case 'count': {
      const n = (contexts.get(contextId) ?? 0) + 1;
      contexts.set(contextId, n);
      io.status('working', `Task ${n} in this context`);
      io.status('completed');
      return;
    }
    default: {
      const rest = words[0] === 'echo' ? words.slice(1) : words;
      io.status('working', 'Echo:');
      for (const w of rest) {
        await sleep(5);
        io.status('working', ` ${w}`);
      }
      io.status('completed');
    }
  }
}

// answer plays the turn after input-required: the user's message is the answer.
export function answer(text, io) {
  io.status('working', `Hello, ${text}!`);
  io.status('completed');
}

// recordRequests is Express middleware that keeps, for every request, what the tests check
// reached the agent: the path, the JSON-RPC method, and the headers Authorization, X-Tenant,
// traceparent and A2A-Version. GET /test/requests lists them. It parses JSON bodies itself
// (express.json, which the SDK's handlers then find done).
export function recordRequests(app, express) {
  const requests = [];
  app.get('/test/requests', (req, res) => res.json(requests));
  app.use(express.json({ limit: '1mb' }), (req, res, next) => {
    requests.push({
      path: req.path,
      method: typeof req.body?.method === 'string' ? req.body.method : '',
      authorization: req.get('authorization') ?? '',
      tenant: req.get('x-tenant') ?? '',
      traceparent: req.get('traceparent') ?? '',
      a2aVersion: req.get('a2a-version') ?? '',
    });
    next();
  });
}
