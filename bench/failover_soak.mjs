#!/usr/bin/env node
// The failover soak (bench/README.md, "Failover soak"): a router node without a model and two
// replicas of one model file (CAF remoting on loopback, --cluster-insecure-acknowledged), and
// cycle after cycle: S streams through the router, one replica SIGKILLed `--kill-after-ms` after
// they start (the replicas take turns being the victim), the victim restarted under its name once
// every stream has ended, and each stream compared, event by event, with what one node alone
// streams for the same request. Every difference is classified:
//   cut        the stream ended early (an error event, no done event, or fewer tokens, the rest equal)
//   lost       a token event missing (the rest equal once it is skipped)
//   duplicated a token event twice (the rest equal once it is skipped)
//   differs    a token that differs (the first such index is recorded)
//   text       token ids equal, text not
//   finish     finish_reason differs
//   usage      usage.completion_tokens differs from the reference's (the lifecycle test's 35 == 36)
//   refused    the request got no stream (HTTP status not 200)
// The workload mixes greedy streams, seeded sampling at temperature 0.8 and structured output (a
// JSON schema), at the lengths of --tokens (one length per cycle, in turn). (n > 1 is not in it:
// a node without the model refuses n > 1, which stays on a node that holds the model, so such a
// stream never moves; README, "Scaling out".) Each stream's index field is checked too: a token
// event whose index is not the count of tokens before it is a lost or duplicated event. --burn K
// runs K busy loops beside the servers (a CPU burner). Prints a line per cycle and the counts by
// class; --json writes every difference. Exits 1 when any stream differed.
//
//   node bench/failover_soak.mjs --server build/dev/tools/bitnet-server \
//        --model tests/data/bitnetcpp/tiny-i2_s.gguf [--cycles 200] [--streams 16] \
//        [--tokens 1500] [--kill-after-ms 1000] [--mix greedy,seeded,schema] [--burn 1] \
//        [--base-port 29480] [--json FILE] [--keep-logs DIR] [--stop-on-diff]
//
// Every server it starts (and the burner) is killed on exit, SIGINT and SIGTERM included.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { adoptChild, get, sleep, startServer as startServerIn, stopServer, waitFor } from './server_procs.mjs';

function parseArgs(argv) {
    const a = {
        server: 'build/dev/tools/bitnet-server', model: '', cycles: 200, streams: 16,
        tokens: [1500], killAfterMs: 1000, mix: ['greedy'], burn: 0, basePort: 29480, json: '',
        keepLogs: '', stopOnDiff: false,
    };
    for (let i = 2; i < argv.length; i += 2) {
        const k = argv[i], v = argv[i + 1];
        if (k === '--server') a.server = v;
        else if (k === '--model') a.model = v;
        else if (k === '--cycles') a.cycles = Number(v);
        else if (k === '--streams') a.streams = Number(v);
        else if (k === '--tokens') a.tokens = v.split(',').map(Number);
        else if (k === '--kill-after-ms') a.killAfterMs = Number(v);
        else if (k === '--mix') a.mix = v.split(',');
        else if (k === '--burn') a.burn = Number(v);
        else if (k === '--base-port') a.basePort = Number(v);
        else if (k === '--json') a.json = v;
        else if (k === '--keep-logs') a.keepLogs = v;
        else if (k === '--stop-on-diff') { a.stopOnDiff = true; --i; }
        else { console.error(`unknown flag ${k}`); process.exit(2); }
    }
    if (!a.model) { console.error('--model FILE is required'); process.exit(2); }
    for (const m of a.mix)
        if (!['greedy', 'seeded', 'schema'].includes(m)) {
            console.error(`unknown --mix kind ${m}`);
            process.exit(2);
        }
    return a;
}

const a = parseArgs(process.argv);
const logDir = a.keepLogs || fs.mkdtempSync(path.join(os.tmpdir(), 'failover-soak-'));
fs.mkdirSync(logDir, { recursive: true });

// ---- the workload -------------------------------------------------------------------------

const schema = {
    type: 'object', properties: { story: { type: 'string' }, n: { type: 'integer' } },
    required: ['story', 'n'],
};

/// Stream `i`'s request body at `tokens` tokens: its kind is the mix's i-th, in turn.
function bodyFor(i, tokens) {
    const kind = a.mix[i % a.mix.length];
    const b = { prompt: `Once upon a time ${i}`, max_tokens: tokens, temperature: 0, ignore_eos: true };
    if (kind === 'seeded') Object.assign(b, { temperature: 0.8, seed: 1000 + i });
    // A schema's value ends when it is whole: no ignore_eos, fewer tokens.
    if (kind === 'schema') Object.assign(b, { json_schema: schema, ignore_eos: false, max_tokens: Math.min(tokens, 256) });
    return { kind, body: JSON.stringify(b) };
}

/// One native stream: its token ids and text (choice 0: the native routes generate one), the
/// token events whose index was not the count of tokens before them, the done event's
/// finish_reason and usage, an error event's code.
function stream(port, body) {
    return new Promise((resolve) => {
        const out = { status: 0, choices: { 0: { ids: [], text: '' } }, misindexed: [], finish: null,
            usage: null, error: null, done: false };
        const req = http.request({
            host: '127.0.0.1', port, path: '/v1/inference/stream', method: 'POST', agent: false,
            headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
        }, (res) => {
            out.status = res.statusCode;
            let buf = '';
            res.setEncoding('utf8');
            res.on('data', (c) => {
                buf += c;
                let at;
                while ((at = buf.indexOf('\n\n')) >= 0) {
                    const ev = buf.slice(0, at);
                    buf = buf.slice(at + 2);
                    const name = /^event: (\S+)/m.exec(ev)?.[1];
                    const data = /^data: (.*)$/m.exec(ev)?.[1];
                    if (!name || data === undefined) continue;
                    const d = JSON.parse(data);
                    if (name === 'token') {
                        const c = out.choices[0];
                        if (d.token_id !== null) {
                            if (d.index !== c.ids.length) out.misindexed.push([c.ids.length, d.index]);
                            c.ids.push(d.token_id);
                        }
                        c.text += d.text;
                    } else if (name === 'done') {
                        out.done = true;
                        out.finish = d.finish_reason;
                        out.usage = d.usage;
                    } else if (name === 'error') {
                        out.error = d.error?.code ?? d.code ?? 'error';
                    }
                }
            });
            res.on('end', () => resolve(out));
            res.on('error', (e) => { out.error = String(e); resolve(out); });
        });
        req.setTimeout(600000, () => req.destroy(new Error('timeout')));
        req.on('error', (e) => { out.error = String(e); resolve(out); });
        req.end(body);
    });
}

/// The classes a stream's difference from its reference falls in (empty when equal).
function classify(got, want) {
    if (got.status !== 200) return [{ cls: 'refused', detail: `HTTP ${got.status} ${got.error ?? ''}` }];
    const out = [];
    const cut = !got.done || got.error !== null;
    for (const [at, index] of got.misindexed.slice(0, 1))
        out.push({ cls: index < at ? 'duplicated' : 'lost', detail: `token ${at} came with index ${index}` });
    for (const [k, w] of Object.entries(want.choices)) {
        const g = got.choices[k] ?? { ids: [], text: '' };
        const at = firstDiff(g.ids, w.ids);
        if (at === -1) {
            if (g.text !== w.text) out.push({ cls: 'text', detail: `choice ${k}` });
            continue;
        }
        const skip = (xs, i) => [...xs.slice(0, i), ...xs.slice(i + 1)];
        if (at === g.ids.length) out.push({ cls: 'cut', detail: `choice ${k}: ${g.ids.length} of ${w.ids.length} tokens` });
        else if (firstDiff(g.ids, skip(w.ids, at)) === -1) out.push({ cls: 'lost', detail: `choice ${k}: token ${at}` });
        else if (firstDiff(skip(g.ids, at), w.ids) === -1) out.push({ cls: 'duplicated', detail: `choice ${k}: token ${at}` });
        else out.push({ cls: 'differs', detail: `choice ${k}: token ${at} is ${g.ids[at]}, one node gives ${w.ids[at]}` });
    }
    if (cut && !out.some((d) => d.cls === 'cut')) out.push({ cls: 'cut', detail: `error ${got.error}, done ${got.done}` });
    if (!cut && got.finish !== want.finish) out.push({ cls: 'finish', detail: `${got.finish} vs ${want.finish}` });
    if (!cut && got.usage?.completion_tokens !== want.usage?.completion_tokens)
        out.push({ cls: 'usage', detail: `completion_tokens ${got.usage?.completion_tokens} vs ${want.usage?.completion_tokens}` });
    return out;
}

/// The first index where `x` and `y` differ; -1 when equal; the shorter's length when one is a
/// prefix of the other.
function firstDiff(x, y) {
    const n = Math.min(x.length, y.length);
    for (let i = 0; i < n; ++i) if (x[i] !== y[i]) return i;
    return x.length === y.length ? -1 : n;
}

// ---- processes ----------------------------------------------------------------------------

const P = a.basePort;
const port = { single: P, a: P + 1, b: P + 2, r: P + 3 };
const cport = { a: P + 1001, b: P + 1002, r: P + 1003 };
const startServer = (name, args) => startServerIn(a.server, logDir, name, args);
const cluster = ['--cluster-insecure', '--cluster-insecure-acknowledged', '--log-level', 'info'];

function startNode(name, join) {
    const model = name === 'r' ? [] : ['--model', a.model, '--alias', 'tiny'];
    return startServer(`${name}`, ['--node-name', name, '--port', String(port[name]), '--threads', '1',
        '--cluster-listen', `127.0.0.1:${cport[name]}`, ...(join ? ['--join', `127.0.0.1:${cport[join]}`] : []),
        ...model, ...cluster]);
}

async function clusterView() {
    const r = await get(port.r, '/v1/cluster');
    return r.status === 200 ? JSON.parse(r.body) : null;
}
async function upWithModel(name) {
    const v = await clusterView();
    return !!v && v.nodes.some((x) => x.name === name && x.state === 'up' && x.models.length > 0);
}
async function running(p) {
    const r = await get(p, '/v1/stats');
    if (r.status !== 200) return -1;
    return JSON.parse(r.body).models.reduce((s, m) => s + m.running, 0);
}
async function finished(p) {
    const r = await get(p, '/v1/stats');
    if (r.status !== 200) return -1;
    return JSON.parse(r.body).models.reduce((s, m) => s + m.finished, 0);
}
async function migrated() {
    const m = /^bitnet_requests_migrated_total\{[^}]*\} ([0-9.e+]+)/m.exec((await get(port.r, '/metrics')).body);
    return m ? Number(m[1]) : 0;
}

/// Short streams through the router until `name` has served some (a restarted node takes work).
async function servesAgain(name) {
    const before = await finished(port[name]);
    await waitFor(`node ${name} to take work`, async () => {
        await Promise.all(Array.from({ length: 8 }, (_, i) =>
            stream(port.r, JSON.stringify({ prompt: `warm ${i}`, max_tokens: 8, temperature: 0 }))));
        return (await finished(port[name])) > before;
    }, 120000);
}

// ---- main ---------------------------------------------------------------------------------

for (const p of Object.values(port))
    if ((await get(p, '/health/live')).status !== 0) {
        console.error(`port ${p} is taken: pick another --base-port`);
        process.exit(1);
    }

// The reference: one node alone, every body of every length, all streams of a length at once
// (as the router runs them).
const reference = {};
{
    const single = startServer('single', ['--port', String(port.single), '--threads', '1', '--model',
        a.model, '--alias', 'tiny', '--log-level', 'warn']);
    await waitFor('the single node', async () => (await get(port.single, '/health/ready')).status === 200);
    for (const t of a.tokens) {
        const bodies = Array.from({ length: a.streams }, (_, i) => bodyFor(i, t));
        reference[t] = await Promise.all(bodies.map((b) => stream(port.single, b.body)));
        const bad = reference[t].filter((r) => r.status !== 200 || !r.done);
        if (bad.length) throw new Error(`the single node failed ${bad.length} reference streams: ${JSON.stringify(bad[0]).slice(0, 300)}`);
    }
    await stopServer(single);
}

for (let i = 0; i < a.burn; ++i)
    adoptChild(spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));

const nodes = { a: startNode('a', null) };
nodes.b = startNode('b', 'a');
nodes.r = startNode('r', 'a');
await waitFor('the router to see both replicas', async () => (await upWithModel('a')) && (await upWithModel('b')));
await servesAgain('a');
await servesAgain('b');

const counts = { cut: 0, lost: 0, duplicated: 0, differs: 0, text: 0, finish: 0, usage: 0, refused: 0 };
const diffs = [];
let cyclesWithMove = 0, streamsMoved = 0, clean = 0;
console.log(`# failover soak: ${path.basename(a.model)}, ${a.cycles} cycles x ${a.streams} streams ` +
    `(${a.mix.join(', ')}) at ${a.tokens.join('/')} tokens, SIGKILL ${a.killAfterMs} ms in, ` +
    `${a.burn} CPU burner(s), logs in ${logDir}`);
const t0 = Date.now();
for (let cycle = 1; cycle <= a.cycles; ++cycle) {
    const tokens = a.tokens[(cycle - 1) % a.tokens.length];
    const victim = cycle % 2 ? 'a' : 'b', survivor = victim === 'a' ? 'b' : 'a';
    await waitFor('idle replicas', async () => (await running(port.a)) === 0 && (await running(port.b)) === 0);
    const m0 = await migrated();
    const bodies = Array.from({ length: a.streams }, (_, i) => bodyFor(i, tokens));
    const started = Date.now();
    const all = Promise.all(bodies.map((b) => stream(port.r, b.body)));
    await sleep(a.killAfterMs);
    const victimRan = await running(port[victim]);
    nodes[victim].killedOnPurpose = true;
    process.kill(nodes[victim].pid, 'SIGKILL');
    const killedAt = Date.now() - started;
    const got = await all;
    const moved = (await migrated()) - m0;
    if (moved > 0) ++cyclesWithMove;
    streamsMoved += moved;
    const found = [];
    got.forEach((g, i) => {
        for (const d of classify(g, reference[tokens][i])) {
            ++counts[d.cls];
            found.push({ cycle, stream: i, kind: bodies[i].kind, tokens, victim, ...d });
        }
    });
    diffs.push(...found);
    if (found.length === 0) ++clean;
    console.log(`cycle ${cycle}: ${tokens} tokens, ${victim} killed after ${killedAt} ms ` +
        `(running ${victimRan} there), ${moved} moved to ${survivor}, all ended after ` +
        `${Date.now() - started} ms; ` +
        (found.length ? `${found.length} differences: ${found.map((d) => `${d.stream}/${d.kind} ${d.cls} (${d.detail})`).join('; ')}`
            : `${a.streams}/${a.streams} equal to one node`));
    if (found.length && a.stopOnDiff) break;
    await waitFor(`${victim} to exit`, async () => nodes[victim].exited, 30000);
    nodes[victim] = startNode(victim, survivor);
    await waitFor(`the router to see ${victim} again`, () => upWithModel(victim));
    await servesAgain(victim);
}
const summary = {
    args: a, cycles_run: diffs.length && a.stopOnDiff ? diffs[diffs.length - 1].cycle : a.cycles,
    cycles_equal: clean, cycles_with_a_moved_stream: cyclesWithMove, streams_moved: streamsMoved,
    counts, seconds: (Date.now() - t0) / 1000, diffs,
};
console.log(`\n${summary.cycles_equal}/${summary.cycles_run} cycles with every stream equal to one node's; ` +
    `${cyclesWithMove} cycles moved streams (${streamsMoved} in all); differences by class: ` +
    Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(', ') + `; ${summary.seconds.toFixed(0)} s`);
if (a.json) fs.writeFileSync(a.json, JSON.stringify(summary, null, 2));
for (const n of ['r', 'a', 'b']) await stopServer(nodes[n]);
process.exit(diffs.length ? 1 : 0);
