// The Harness Runtime API of this origin. Every call goes through request(), so errors arrive in
// one shape: an ApiError carrying the protocol's Problem (code, message) and the HTTP status.

export const API = '/v1';

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.message);
    this.status = status;
    this.code = problem.code;
    this.details = problem.details;
  }
}

export async function request(method, path, body) {
  const init = { method, headers: { Accept: 'application/json' }, credentials: 'same-origin' };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(API + path, init);
  } catch (err) {
    throw new ApiError(0, { code: 'NETWORK_ERROR', message: `The server could not be reached (${err.message}).` });
  }
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    // Not JSON: a proxy's or an auth layer's page. Shown as text below.
  }
  if (!res.ok) {
    const problem = data && typeof data.code === 'string'
      ? data
      : { code: `HTTP_${res.status}`, message: text.trim() || res.statusText || `HTTP ${res.status}` };
    throw new ApiError(res.status, problem);
  }
  return data;
}

// parseConfig reads a provider config typed as JSON: an object ("" is {}), or an Error saying why not.
export function parseConfig(text) {
  const value = JSON.parse(text || '{}');
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('the config must be a JSON object, like {}');
  return value;
}

export const get = (path) => request('GET', path);
export const post = (path, body) => request('POST', path, body);

// The states, and which are terminal, come from harness.yaml (facts.gen.js, by make generate).
export { STATES, TERMINAL_STATES as TERMINAL } from './facts.gen.js';

export const enc = encodeURIComponent;
