// Small helpers the client tests share: a fetch that records what an SDK sent and what came back
// (so a failing test shows the exact exchange), a JSON Schema validator, and the tool schema.
import assert from 'node:assert/strict';
import Ajv from 'ajv';

/// The tool every test calls: bounded, so a forced call's arguments stay short.
export const WEATHER_PARAMS = {
  type: 'object',
  properties: { city: { type: 'string', maxLength: 12 } },
  required: ['city'],
  additionalProperties: false,
};

/// A small bounded object for structured output.
export const PERSON_SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
  },
  required: ['name', 'age'],
  additionalProperties: false,
};

const ajv = new Ajv({ strict: false });

/// Asserts `value` is valid under `schema` (a JSON Schema), naming the errors otherwise.
export function assertMatchesSchema(value, schema, what = 'value') {
  const validate = ajv.compile(schema);
  if (!validate(value)) {
    throw new Error(`${what} ${JSON.stringify(value)} does not match the schema: ` +
                    ajv.errorsText(validate.errors));
  }
}

/// A fetch for an SDK's `fetch` option that keeps every exchange:
/// { method, url, requestHeaders, requestBody, status, responseHeaders, responseBody }.
/// `rec.dump()` renders them for a failure message.
export function recordingFetch() {
  const exchanges = [];
  const wrapped = async (input, init = {}) => {
    const url = typeof input === 'string' ? input : (input.url ?? String(input));
    const headers = Object.fromEntries(new Headers(init.headers ?? input.headers ?? {}));
    if (headers.authorization) headers.authorization = '(redacted)';
    if (headers['x-api-key']) headers['x-api-key'] = '(redacted)';
    const entry = {
      method: init.method ?? input.method ?? 'GET',
      url,
      requestHeaders: headers,
      requestBody: typeof init.body === 'string' ? init.body : init.body ? '(non-string body)' : undefined,
    };
    exchanges.push(entry);
    const response = await fetch(input, init);
    entry.status = response.status;
    entry.responseHeaders = Object.fromEntries(response.headers);
    entry.responseBody = '';
    // A clone read alongside the SDK's copy (streams included), so nothing waits on it.
    response.clone().text().then((t) => { entry.responseBody = t; }, () => {});
    return response;
  };
  return {
    fetch: wrapped,
    exchanges,
    /// The request bodies sent to a path ending in `suffix`, parsed.
    bodies: (suffix) => exchanges.filter((e) => new URL(e.url).pathname.endsWith(suffix))
      .map((e) => JSON.parse(e.requestBody)),
    dump: (from = 0) => exchanges.slice(from).map((e, i) =>
      `#${from + i} ${e.method} ${e.url}\n  sent: ${e.requestBody}\n  got ${e.status}: ` +
      `${e.responseBody.length > 2000 ? e.responseBody.slice(0, 2000) + '…' : e.responseBody}`).join('\n'),
  };
}

/// Runs `body`; when it throws, the error's message gains the exchanges recorded meanwhile, so a
/// server fault shows the requests the SDK sent and the server's answers.
export async function withExchanges(rec, body) {
  const from = rec.exchanges.length;
  try {
    return await body();
  } catch (e) {
    await new Promise((r) => setTimeout(r, 20)); // the clones' text settles
    if (e && typeof e === 'object') {
      const exchanges = `\n--- exchanges ---\n${rec.dump(from)}`;
      try {
        e.message += exchanges; // the TAP reporter prints the message,
        if (typeof e.stack === 'string') e.stack += exchanges; // the spec reporter (CTest's) the stack
      } catch { /* read-only */ }
    }
    throw e;
  }
}

/// OpenAI-style usage: the total is the sum, the completion within the limit.
export function assertChatUsage(usage, maxCompletion) {
  assert.ok(usage, 'usage present');
  assert.ok(Number.isInteger(usage.prompt_tokens) && usage.prompt_tokens > 0, 'prompt_tokens > 0');
  assert.ok(Number.isInteger(usage.completion_tokens) && usage.completion_tokens >= 0);
  assert.ok(usage.completion_tokens <= maxCompletion,
            `completion_tokens ${usage.completion_tokens} <= ${maxCompletion}`);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
}
