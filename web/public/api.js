// The REST API (DESIGN §6), and nothing else: every page talks to the service
// through these functions.

// A non-2xx answer. `problem` is the application/problem+json body (with
// `errors: [{field, message, hint}]` on 422), or a minimal one built from
// the status when the body was not JSON.
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

// The API token, when the service requires one (kept in this browser only).
const TOKEN_KEY = 'tpujobs.token';
export const getToken = () => localStorage.getItem(TOKEN_KEY) || '';
export function setToken(token) {
  if (token) localStorage.setItem(TOKEN_KEY, token);
  else localStorage.removeItem(TOKEN_KEY);
}

async function request(method, path, body) {
  const init = { method, headers: { Accept: 'application/json' } };
  const token = getToken();
  if (token) init.headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const type = response.headers.get('Content-Type') || '';
  const payload = type.includes('json') ? await response.json() : await response.text();
  if (!response.ok) {
    const problem = typeof payload === 'object' ? payload : { title: response.statusText, detail: payload };
    // The shell asks for a token when the service wants one (or rejects the one given).
    if (response.status === 401) window.dispatchEvent(new CustomEvent('tpujobs:unauthorized', { detail: problem }));
    throw new ApiError(response.status, problem);
  }
  return payload;
}

function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === '') continue;
    for (const item of Array.isArray(value) ? value : [value]) search.append(key, item);
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

// {jobs, next_cursor}, newest first. `label` is "key=value" (or a list of them).
export const listJobs = ({ state, label, name, array, limit, cursor } = {}) =>
  request('GET', `/v1/jobs${query({ state, label, name, array, limit, cursor })}`);
export const getJob = (id) => request('GET', `/v1/jobs/${id}`);
export const jobEvents = (id) => request('GET', `/v1/jobs/${id}/events`);
export const jobNotifications = (id) => request('GET', `/v1/jobs/${id}/notifications`);
export const jobMetrics = (id, after = 0) => request('GET', `/v1/jobs/${id}/metrics${query({ after })}`);
export const xlaReport = (id) => request('GET', `/v1/jobs/${id}/xla-report`);
export const cancelJob = (id) => request('POST', `/v1/jobs/${id}/cancel`);
// `spec` may be the raw editor text, so the server reports malformed JSON itself.
export const validateSpec = (spec) => request('POST', '/v1/jobs:validate', spec);
export const submitJob = (spec) => request('POST', '/v1/jobs', spec);
// The script check of `tpujobs check` (POST /v1/checks).
export const checkScripts = (body) => request('POST', '/v1/checks', body);
export const getPool = () => request('GET', '/v1/pool');
export const getUsage = ({ from, to, group_by } = {}) => request('GET', `/v1/usage${query({ from, to, group_by })}`);
// action: "drain" | "fail" | "recover".
export const hostAction = (host, action) =>
  request('POST', `/v1/pool/hosts/${encodeURIComponent(host)}:${action}`);

// Follows a job's log live (Server-Sent Events). Calls onLine({seq, line}) once
// per line in order, starting after `after`, and onEnd(state) when the job is
// over and every line has been sent. A dropped connection is reopened after
// the last line seen. Returns a function that stops following.
export function followLogs(id, after, onLine, onEnd) {
  let last = after;
  let source = null;
  let retry = null;
  let stopped = false;
  const open = () => {
    // EventSource cannot send headers: the service also takes the token as access_token.
    source = new EventSource(`/v1/jobs/${id}/logs${query({ after: last, access_token: getToken() })}`);
    source.addEventListener('log', (event) => {
      const entry = JSON.parse(event.data);
      if (entry.seq <= last) return;
      last = entry.seq;
      onLine(entry);
    });
    source.addEventListener('end', (event) => {
      stop();
      onEnd(JSON.parse(event.data).state);
    });
    source.onerror = () => {
      source.close();
      if (!stopped) retry = setTimeout(open, 1000);
    };
  };
  const stop = () => {
    stopped = true;
    clearTimeout(retry);
    if (source) source.close();
  };
  open();
  return stop;
}

// A tenant's limits in effect (GET) and, for an admin, set (POST): a field
// left out or null takes the service's default (README "Limits").
export const getLimits = (tenant) => request('GET', `/v1/tenants/${encodeURIComponent(tenant)}/limits`);
export const setLimits = (tenant, limits) => request('POST', `/v1/tenants/${encodeURIComponent(tenant)}/limits`, limits);
