// README.md's examples, run verbatim against the real server and the default model: every
// ```sh block after a `<!-- readme-example: NAME -->` mark is handed to bash exactly as the README
// writes it, and each curl's answer is checked for its shape (a reply, a stream, a tool call that
// parses under its schema). Two things are added around the block, never inside it: `H` as the
// README's own blocks set it, and a `curl` shell function that runs the real curl with
// `--connect-to` (localhost:8080 and 127.0.0.1:8080 reach the test's server, on a port the OS
// chose) and ends each answer with a separator line, so that each answer is checked on its own.
// A marked block without checks here, or checks without their block, fail the test.
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createParser } from 'eventsource-parser';
import { startServer } from './harness.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const README = readFileSync(`${ROOT}README.md`, 'utf8');
const SEPARATOR = '\n\x1e\n';

/// NAME -> the block's text, in README order.
const BLOCKS = new Map(
  [...README.matchAll(/<!-- readme-example: ([a-z-]+) -->\n```sh\n([\s\S]*?)\n```/g)].map((m) => [m[1], m[2]]));

let server;
before(async () => { server = await startServer([], { keys: false }); });
after(async () => { await server?.stop(); });

/// Runs `block` in bash as the README writes it; resolves to each curl's answer, in order.
function run(block) {
  const prelude = [
    "H='Content-Type: application/json'",
    `curl() { command curl --connect-to localhost:8080:127.0.0.1:${server.port} ` +
      `--connect-to 127.0.0.1:8080:127.0.0.1:${server.port} "$@"; printf '${SEPARATOR.replaceAll('\n', '\\n').replace('\x1e', '\\036')}'; }`,
  ].join('\n');
  return new Promise((resolve, reject) => {
    execFile('bash', ['-c', `${prelude}\n${block}\n`], { timeout: 120_000, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`the block failed: ${err.message}\n${stderr}`));
        const answers = stdout.split(SEPARATOR);
        assert.equal(answers.pop().trim(), '', 'output after the last answer');
        resolve(answers);
      });
  });
}

const json = (text) => {
  try { return JSON.parse(text); } catch { assert.fail(`not JSON: ${text.slice(0, 500)}`); }
};
/// An SSE answer as [{event, data}] (data parsed unless it is [DONE]).
function sse(text) {
  const events = [];
  createParser({ onEvent: (e) => events.push({ event: e.event ?? 'message', data: e.data === '[DONE]' ? e.data : JSON.parse(e.data) }) }).feed(text);
  assert.ok(events.length > 0, `not a stream: ${text.slice(0, 300)}`);
  return events;
}
const data = (events, name) => events.filter((e) => e.event === name).map((e) => e.data);

/// A forced call's arguments: JSON of the example's get_weather schema (a city of 1..12 code points).
function weatherArgs(text) {
  const args = typeof text === 'string' ? json(text) : text;
  assert.deepEqual(Object.keys(args), ['city']);
  assert.ok([...args.city].length <= 12, `city ${args.city}`);
}

/// NAME -> one check per curl answer of its block.
const CHECKS = {
  quickstart: [(a) => {
    const r = json(a);
    assert.equal(r.object, 'text_completion');
    assert.equal(typeof r.choices[0].text, 'string');
  }],
  sampling: [(a) => {
    const r = json(a);
    // ignore_eos: exactly max_tokens, however early the model would have ended.
    assert.equal(r.usage.completion_tokens, 24);
    assert.equal(r.choices[0].finish_reason, 'length');
  }],
  serving: [
    (a) => assert.equal(typeof json(a).text, 'string'),
    (a) => assert.ok(sse(a).some((e) => e.event === 'done')),
    (a) => assert.equal(json(a).choices[0].logprobs.top_logprobs[0] !== undefined, true),
    (a) => assert.ok(Array.isArray(json(a).tokens)),
    (a) => assert.equal(typeof json(a).text, 'string'),
    (a) => assert.equal(json(a).alias ?? json(a).id, 'bitnet'),
    (a) => assert.ok(json(a).status),
    (a) => assert.match(a, /^# (HELP|TYPE) bitnet_/m),
  ],
  structured: [
    (a) => {
      const person = json(json(a).choices[0].message.content);
      assert.deepEqual(Object.keys(person).sort(), ['age', 'name']);
    },
    (a) => assert.ok(['"yes"', '"no"'].includes(json(a).text), json(a).text),
    (a) => {
      const choice = json(a).choices[0];
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.equal(choice.message.tool_calls[0].function.name, 'get_weather');
      weatherArgs(choice.message.tool_calls[0].function.arguments);
    },
  ],
  guided: [
    (a) => assert.ok(['yes', 'no', 'maybe'].includes(json(a).choices[0].text), json(a).choices[0].text),
    (a) => assert.match(json(a).choices[0].message.content, /^20[0-9]{2}-[01][0-9]-[0-3][0-9]$/),
    (a) => assert.ok(['red', 'green'].includes(json(a).text), json(a).text),
  ],
  responses: [
    (a) => {
      const r = json(a);
      assert.equal(r.object, 'response');
      assert.equal(r.instructions, 'You tell fortunes.');
      assert.equal(r.output[0].type, 'message');
    },
    (a) => {
      const events = sse(a);
      assert.equal(events.at(-1).event, 'response.completed');
      const [item] = data(events, 'response.output_item.done').map((d) => d.item);
      assert.equal(item.type, 'function_call');
      assert.equal(item.name, 'get_weather');
      weatherArgs(item.arguments);
    },
  ],
  'responses-stored': [
    (a) => {
      const r = json(a);
      assert.equal(r.object, 'response');
      assert.match(r.id, /^resp_/);
    },
    (a) => {
      const list = json(a);
      assert.equal(list.object, 'list');
      assert.equal(list.data[0].type, 'message');
      assert.equal(list.data[0].role, 'user');
    },
    (a) => assert.equal(json(a).deleted, true),
  ],
  messages: [
    (a) => {
      const m = json(a);
      assert.equal(m.type, 'message');
      assert.equal(m.content[0].type, 'text');
    },
    (a) => {
      const events = sse(a);
      assert.equal(events.at(-1).event, 'message_stop');
      assert.equal(data(events, 'message_delta')[0].delta.stop_reason, 'tool_use');
      const start = data(events, 'content_block_start')[0].content_block;
      assert.equal(start.type, 'tool_use');
      weatherArgs(data(events, 'content_block_delta').map((d) => d.delta.partial_json).join(''));
    },
    (a) => {
      const m = json(a);
      assert.equal(m.stop_reason, 'end_turn');
      const value = json(m.content[0].text);
      assert.deepEqual(Object.keys(value), ['fortune']);
    },
  ],
};

test('every marked README block has its checks, and every check its block', () => {
  assert.deepEqual([...BLOCKS.keys()].sort(), Object.keys(CHECKS).sort());
});

test('no README block uses $H before the README has set it', () => {
  // A reader copies the blocks in order: the first that uses H must set it (the run adds it to
  // every block, so a block that forgot would pass there).
  let set = false;
  for (const [name, block] of BLOCKS) {
    set ||= /^H='Content-Type: application\/json'$/m.test(block);
    if (block.includes('"$H"')) assert.ok(set, `the README example '${name}' uses $H before any block sets it`);
  }
});

for (const [name, block] of BLOCKS) {
  test(`README example '${name}' runs verbatim and answers as documented`, async () => {
    const checks = CHECKS[name];
    assert.ok(checks, `no checks for the README example '${name}'`);
    const answers = await run(block);
    assert.equal(answers.length, checks.length, `'${name}' gave ${answers.length} answers:\n${answers.join('\n---\n').slice(0, 3000)}`);
    answers.forEach((a, i) => {
      try {
        checks[i](a);
      } catch (e) {
        e.message = `answer ${i + 1} of '${name}': ${e.message}\n${a.slice(0, 1500)}`;
        throw e;
      }
    });
  });
}
