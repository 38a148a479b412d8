// The contract router's checker (tests/python/contract_proxy.py relays the
// bytes; this process judges them). Every OpenAPI part is Stoplight Prism's
// own code, used as a library from web/node_modules (@stoplight/prism-http,
// the package `prism proxy --errors` runs): the document is loaded and its
// $refs resolved by getHttpOperationsFromSpec (@stoplight/http-spec turns
// the OpenAPI operations into Prism's model), the request is matched to an
// operation by Prism's router, and checked by its validateInput (path,
// query and header parameters deserialised by their style, required ones,
// Content-Type, the body against its schema) and validateSecurity; the
// answer by validateOutput (status listed, Content-Type listed, the body
// against its schema, declared headers). Schemas are checked by ajv.
//
// Two checks are added on top, stricter than Prism: a query parameter the
// operation does not declare (the client or the service drifting from the
// document), and a body on an answer the document gives no content.
// Prism reports a status the document does not list as a warning for a 4xx
// or 5xx; here any diagnostic that is an error or a warning is a violation
// (deprecation warnings aside).
//
// Events of text/event-stream answers (the document's `x-events` extension,
// which no OpenAPI tool reads) are checked with ajv's Draft 2020-12
// validator against the dereferenced schemas.
//
//   node openapi_check.cjs DOCUMENT
// reads one JSON request a line on stdin and writes one JSON answer a line:
//   {"id", "method", "target", "headers", "body" (base64), "status",
//    "answer_headers", "answer_body" (base64), "stream": bool}
//     -> {"id", "operation", "request": [..], "answer": [..], "events": {name: true}}
//   {"id", "event": {"method", "target", "status", "name", "data"}}
//     -> {"id", "event": [..]}
// then prints "ready" once the document is loaded.
'use strict';

const path = require('path');
const readline = require('readline');

const modules = process.env.TPUJOBS_WEB_NODE_MODULES ||
                path.resolve(__dirname, '..', '..', 'web', 'node_modules');
const need = name => require(path.join(modules, name));
const prism = need('@stoplight/prism-http');
const route = need('@stoplight/prism-http/dist/router').default;
const validator = need('@stoplight/prism-http/dist/validator');
const RefParser = need('@stoplight/json-schema-ref-parser');
const Ajv2020 = need('ajv/dist/2020').default;
const typeIs = need('type-is');
const E = need('fp-ts/Either');

const SEVERITY_WARNING = 1;  // @stoplight/types DiagnosticSeverity: Error 0, Warning 1

function lowered(headers) {
  const out = {};
  for (const [k, v] of Object.entries(headers || {})) out[k.toLowerCase()] = v;
  return out;
}

function isJson(contentType) {
  return !!contentType && !!typeIs.is(contentType, ['application/json', 'application/*+json']);
}

// A body as Prism's server reads one: JSON for a JSON media type, text else.
function readBody(base64, contentType, problems, where) {
  if (!base64) return undefined;
  const text = Buffer.from(base64, 'base64').toString('utf8');
  if (!isJson(contentType)) return text;
  try {
    return JSON.parse(text);
  } catch (e) {
    problems.push(`${where}: not JSON (${e.message})`);
    return undefined;
  }
}

function query(target) {
  const url = new URL(target, 'http://router.invalid');
  const values = {};
  for (const key of new Set(url.searchParams.keys())) {
    const all = url.searchParams.getAll(key);
    values[key] = all.length === 1 ? all[0] : all;
  }
  return {path: url.pathname, query: values};
}

function diagnostics(either) {
  if (E.isRight(either)) return [];
  return either.left
      .filter(d => d.severity <= SEVERITY_WARNING && d.code !== 'deprecated')
      .map(d => (d.path && d.path.length ? d.path.join('.') + ': ' : '') + d.message);
}

function name(operation) {
  return `${operation.iid || operation.id} (${operation.method.toUpperCase()} ${operation.path})`;
}

class Checker {
  constructor(operations, events) {
    this.operations = operations;
    this.events = events;  // "METHOD template status" -> {event name -> validate}
  }

  exchange(m) {
    const request = [];
    const answer = [];
    const requestHeaders = lowered(m.headers);
    const body = m.body ? Buffer.from(m.body, 'base64') : Buffer.alloc(0);
    requestHeaders['content-length'] = String(body.length);
    const url = query(m.target);
    const input = {
      method: m.method.toLowerCase(),
      url,
      headers: requestHeaders,
      body: readBody(m.body, requestHeaders['content-type'], request, 'body'),
    };
    const matched = route({resources: this.operations, input});
    if (E.isLeft(matched)) {
      request.push(matched.left.detail || matched.left.message || String(matched.left));
      return {operation: null, request, answer: this.unmatched(m)};
    }
    const operation = matched.right;
    request.push(...diagnostics(validator.validateInput({resource: operation, element: input})));
    request.push(...diagnostics(validator.validateSecurity({resource: operation, element: input})));
    // A query parameter is declared by the operation, or by a security
    // scheme of the apiKey kind in the query (access_token).
    const declared = new Set(((operation.request || {}).query || []).map(p => p.name));
    for (const alternatives of operation.security || []) {
      for (const scheme of alternatives) {
        if (scheme.type === 'apiKey' && scheme.in === 'query') declared.add(scheme.name);
      }
    }
    for (const key of Object.keys(url.query)) {
      if (!declared.has(key)) request.push(`query.${key}: not a parameter of the operation`);
    }
    const answerHeaders = lowered(m.answer_headers);
    const contentType = answerHeaders['content-type'];
    // A HEAD answer and a live stream have no body to check here (a stream's
    // events are checked one by one: event()).
    const head = m.method.toUpperCase() === 'HEAD' || m.stream;
    const output = {
      statusCode: m.status,
      headers: answerHeaders,
      body: head ? undefined : readBody(m.answer_body, contentType, answer, 'answer body'),
    };
    const checked = validator.validateOutput({resource: operation, element: output});
    answer.push(...diagnostics(checked).filter(p => !(head && p.startsWith('body'))));
    const listed = (operation.responses || []).find(r => r.code === String(m.status));
    if (!head && m.answer_body && listed && !(listed.contents || []).length) {
      answer.push(`status ${m.status}: the document gives no content, the answer has a body`);
    }
    const key = `${operation.method.toUpperCase()} ${operation.path} ${m.status}`;
    return {operation: name(operation), request, answer,
            events: m.stream ? Object.keys(this.events[key] || {}) : undefined};
  }

  // A request no operation describes: the only fitting answer is a 4xx problem.
  unmatched(m) {
    const contentType = lowered(m.answer_headers)['content-type'] || '';
    const media = contentType.split(';')[0].trim().toLowerCase();
    if (m.status >= 400 && m.status < 500 && media === 'application/problem+json') return [];
    return [`a request no operation describes was answered ${m.status} ` +
            `${media || '(no Content-Type)'}, not a 4xx problem+json`];
  }

  event(m) {
    const {path: requestPath} = query(m.target);
    const found = route({resources: this.operations,
                         input: {method: m.method.toLowerCase(), url: {path: requestPath, query: {}}}});
    if (E.isLeft(found)) return ['no operation for the stream'];
    const operation = found.right;
    const schemas = this.events[`${operation.method.toUpperCase()} ${operation.path} ${m.status}`];
    const text = String(m.data).slice(0, 500);
    if (!schemas) return ['a text/event-stream answer the document gives no x-events for'];
    const validate = schemas[m.name];
    if (!validate) {
      return [`event '${m.name}' is not in the document's x-events ` +
              `(${Object.keys(schemas).sort().join(', ')}): ${text}`];
    }
    let value;
    try {
      value = JSON.parse(m.data);
    } catch (e) {
      return [`event '${m.name}': data is not JSON (${e.message}): ${text}`];
    }
    if (validate(value)) return [];
    return validate.errors.map(e => `event '${m.name}': ${e.instancePath || 'data'}: ` +
                                    `${e.message}: ${text}`);
  }
}

// The x-events schemas of every text/event-stream answer, compiled.
function eventSchemas(document) {
  const ajv = new Ajv2020({allErrors: true, strict: false});
  const found = {};
  for (const [template, item] of Object.entries(document.paths || {})) {
    for (const [method, operation] of Object.entries(item)) {
      for (const [status, answer] of Object.entries((operation || {}).responses || {})) {
        const events = (((answer || {}).content || {})['text/event-stream'] || {})['x-events'];
        if (!events) continue;
        found[`${method.toUpperCase()} ${template} ${status}`] = Object.fromEntries(
            Object.entries(events).map(([event, schema]) => [event, ajv.compile(schema)]));
      }
    }
  }
  return found;
}

// Compiles every schema the checks use (ajv compiles on first use, up to
// seconds for the job spec on a loaded machine), so that no exchange waits
// for a compile: each operation's parameters and body, each answer's body.
function warmUp(operations) {
  for (const operation of operations) {
    const input = {method: operation.method, url: {path: operation.path, query: {}},
                   headers: {'content-length': '2', 'content-type': 'application/json'}, body: {}};
    validator.validateInput({resource: operation, element: input});
    for (const response of operation.responses || []) {
      for (const content of response.contents || []) {
        validator.validateOutput({resource: operation, element: {
          statusCode: Number(response.code) || 200,
          headers: {'content-type': content.mediaType}, body: {}}});
      }
    }
  }
}

async function main() {
  const documentPath = path.resolve(process.argv[2]);
  const operations = await prism.getHttpOperationsFromSpec(documentPath);
  const dereferenced = await new RefParser().dereference(documentPath);
  const checker = new Checker(operations, eventSchemas(dereferenced));
  warmUp(operations);
  const lines = readline.createInterface({input: process.stdin, crlfDelay: Infinity});
  process.stdout.write('ready\n');
  for await (const line of lines) {
    if (!line.trim()) continue;
    let m;
    let out;
    try {
      m = JSON.parse(line);
      out = m.event ? {event: checker.event(m.event)} : checker.exchange(m);
    } catch (e) {
      out = {error: `the checker failed: ${e && e.stack || e}`};
    }
    out.id = m ? m.id : null;
    process.stdout.write(JSON.stringify(out) + '\n');
  }
}

main().catch(e => {
  process.stderr.write(`openapi_check: ${e && e.stack || e}\n`);
  process.exit(1);
});
