#!/usr/bin/env node
// The cluster on one machine (bench/README.md, "Cluster"): the same streaming workload against
//   (a) one node with --threads 2, clients talking to it directly, and
//   (b) two replica nodes with --threads 1 each behind a third node without a model (the router:
//       clients talk to it; admission places each request on a replica, the stream relay brings
//       the replica's output back, one stream_batch per step per node),
// both configurations started once and kept up, measured interleaved a, b, a, b ... Per run:
// aggregate tokens/s, TTFT and ITL (bench/loadgen.mjs, run as a child), CPU time of every server
// process (/proc/PID/stat utime + stime, before and after) per generated token, the router's
// per-link counters from /metrics (stream_batch and heartbeat messages and bytes per token) and
// the TCP bytes of its cluster sockets (`ss -tinp`: what crossed the wire, BASP framing
// included). Then the failover run: S long streams through the router, SIGKILL replica `a` once
// every stream has delivered some tokens, and per stream moved to `b` (the router's log names
// them) the time from the kill to its next token, client-side; each stream's token ids are
// compared with the same prompt served by node (a) alone (greedy).
//
//   node bench/cluster_bench.mjs --server build/release/tools/bitnet-server \
//        --model 2b4t.gguf --vocab 128256 [--streams 32] [--max-tokens 64] [--prompt-tokens 16]
//        [--pairs 3] [--failover-tokens 64] [--base-port 28480] [--json FILE] [--keep-logs DIR]
//
// Prints markdown tables. Every server it starts is killed on exit (and on SIGINT/SIGTERM).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { get, sleep, startServer as startServerIn, stopServer, waitFor } from './server_procs.mjs';
import { promptFor, streamOne } from './sse_stream.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

function parseArgs(argv) {
    const a = {
        server: 'build/release/tools/bitnet-server', model: '', vocab: 500, streams: 32,
        maxTokens: 64, promptTokens: 16, pairs: 3, failoverTokens: 64, basePort: 28480, json: '',
        keepLogs: '', maxSeqs: 64,
    };
    for (let i = 2; i < argv.length; i += 2) {
        const k = argv[i], v = argv[i + 1];
        if (k === '--server') a.server = v;
        else if (k === '--model') a.model = v;
        else if (k === '--vocab') a.vocab = Number(v);
        else if (k === '--streams') a.streams = Number(v);
        else if (k === '--max-tokens') a.maxTokens = Number(v);
        else if (k === '--prompt-tokens') a.promptTokens = Number(v);
        else if (k === '--pairs') a.pairs = Number(v);
        else if (k === '--failover-tokens') a.failoverTokens = Number(v);
        else if (k === '--base-port') a.basePort = Number(v);
        else if (k === '--json') a.json = v;
        else if (k === '--keep-logs') a.keepLogs = v;
        else if (k === '--max-seqs') a.maxSeqs = Number(v);
        else { console.error(`unknown flag ${k}`); process.exit(2); }
    }
    if (!a.model) { console.error('--model FILE is required'); process.exit(2); }
    return a;
}

const a = parseArgs(process.argv);
const logDir = a.keepLogs || fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-bench-'));
fs.mkdirSync(logDir, { recursive: true });
const median = (xs) => {
    const s = [...xs].sort((x, y) => x - y);
    return s.length === 0 ? NaN : (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2;
};

// ---- processes ----------------------------------------------------------------------------

const startServer = (name, args) => startServerIn(a.server, logDir, name, args);

/// utime + stime of a process, in seconds.
function cpuSeconds(pid) {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / clkTck;
}
const clkTck = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

// ---- HTTP ---------------------------------------------------------------------------------

/// The router sees both replicas up, each with a model.
async function clusterReady(port) {
    const r = await get(port, '/v1/cluster');
    if (r.status !== 200) return false;
    const v = JSON.parse(r.body);
    const up = (n) => v.nodes.some((x) => x.name === n && x.state === 'up' && x.models.length > 0);
    return up('a') && up('b');
}

/// Sums of the cluster link counters on one node's /metrics, by direction and kind.
async function linkCounters(port) {
    const r = await get(port, '/metrics');
    const out = {};
    for (const line of r.body.split('\n')) {
        const m = /^bitnet_cluster_link_(messages|bytes)_total\{([^}]*)\} ([0-9.e+]+)/.exec(line);
        if (!m) continue;
        const labels = Object.fromEntries([...m[2].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
        const key = `${m[1]}.${labels.direction}.${labels.kind}`;
        out[key] = (out[key] || 0) + Number(m[3]);
    }
    const mig = /^bitnet_requests_migrated_total\{[^}]*\} ([0-9.e+]+)/m.exec(r.body);
    out.migrated = mig ? Number(mig[1]) : 0;
    return out;
}
const diff = (x, y) => Object.fromEntries(Object.keys(y).map((k) => [k, y[k] - (x[k] || 0)]));

/// TCP payload bytes sent + received on `pid`'s sockets to or from the cluster ports (BASP frames
/// as they cross the wire), from `ss -tinp`.
function clusterSocketBytes(pid, clusterPorts) {
    let text = '';
    try { text = execFileSync('ss', ['-tinpH'], { encoding: 'utf8' }); } catch { return NaN; }
    const lines = text.split('\n');
    let total = 0;
    for (let i = 0; i < lines.length; ++i) {
        const l = lines[i];
        if (!l.includes(`pid=${pid},`)) continue;
        const ports = [...l.matchAll(/:(\d+)\s/g)].map((m) => Number(m[1]));
        if (!ports.some((p) => clusterPorts.includes(p))) continue;
        const info = lines[i + 1] || '';
        const sent = /bytes_sent:(\d+)/.exec(info), recv = /bytes_received:(\d+)/.exec(info);
        total += (sent ? Number(sent[1]) : 0) + (recv ? Number(recv[1]) : 0);
    }
    return total;
}

/// bench/loadgen.mjs as a child: one level of `streams` clients; its JSON result.
function loadgen(port, streams, maxTokens) {
    const out = path.join(logDir, `loadgen-${port}.json`);
    execFileSync('node', [path.join(here, 'loadgen.mjs'), '--port', String(port), '--concurrency',
        String(streams), '--max-tokens', String(maxTokens), '--prompt-tokens', String(a.promptTokens),
        '--vocab', String(a.vocab), '--warmup', '0', '--json', out], { stdio: 'ignore' });
    return JSON.parse(fs.readFileSync(out, 'utf8'))[0];
}

// ---- the two configurations ---------------------------------------------------------------

const common = ['--max-seqs', String(a.maxSeqs), '--log-level', 'info'];
const P = a.basePort;
const port = { single: P, a: P + 1, b: P + 2, r: P + 3 };
const cport = { a: P + 1001, b: P + 1002, r: P + 1003 };
const clusterPorts = Object.values(cport);

function startSingle() {
    return startServer('single', ['--model', a.model, '--port', String(port.single),
        '--threads', '2', ...common]);
}
function startCluster() {
    const joinA = `127.0.0.1:${cport.a}`;
    const node = (name, extra) => startServer(name, ['--node-name', name, '--port', String(port[name]),
        '--cluster-listen', `127.0.0.1:${cport[name]}`, '--cluster-insecure', '--cluster-insecure-acknowledged', ...extra, ...common]);
    return {
        a: node('a', ['--model', a.model, '--threads', '1']),
        b: node('b', ['--model', a.model, '--threads', '1', '--join', joinA]),
        r: node('r', ['--threads', '1', '--join', joinA]),
    };
}

async function warm(p) {
    // Two concurrent requests: through the router they land on both replicas (least work).
    for (let i = 0; i < 3; ++i) loadgen(p, 2, 4);
}

async function runSingle(single) {
    const c0 = cpuSeconds(single.pid);
    const l = loadgen(port.single, a.streams, a.maxTokens);
    const cpu = cpuSeconds(single.pid) - c0;
    return { config: 'a', load: l, cpu_s: cpu, cpu_ms_per_token: 1000 * cpu / l.tokens };
}

async function runCluster(cl) {
    const pids = [cl.a.pid, cl.b.pid, cl.r.pid];
    const c0 = pids.map(cpuSeconds);
    const m0 = await linkCounters(port.r);
    const w0 = clusterSocketBytes(cl.r.pid, clusterPorts);
    const l = loadgen(port.r, a.streams, a.maxTokens);
    const w1 = clusterSocketBytes(cl.r.pid, clusterPorts);
    const m1 = await linkCounters(port.r);
    const cpu = pids.map((p, i) => cpuSeconds(p) - c0[i]);
    const total = cpu.reduce((s, x) => s + x, 0);
    const links = diff(m0, m1);
    return {
        config: 'b', load: l, cpu_s: total, cpu_ms_per_token: 1000 * total / l.tokens,
        cpu_s_by_node: { a: cpu[0], b: cpu[1], r: cpu[2] },
        router_cpu_ms_per_token: 1000 * cpu[2] / l.tokens,
        links,
        stream_msgs_per_token: (links['messages.in.stream'] || 0) / l.tokens,
        stream_bytes_per_token: (links['bytes.in.stream'] || 0) / l.tokens,
        router_wire_bytes_per_token: (w1 - w0) / l.tokens,
    };
}

// ---- failover -----------------------------------------------------------------------------

async function traced(p, n, maxTokens) {
    const traces = Array.from({ length: n }, () => ({ reqId: '', ids: [], times: [] }));
    const opts = { host: '127.0.0.1', port: p, route: '/v1/inference/stream', maxTokens, timeoutMs: 600000 };
    const done = Promise.all(traces.map((t, i) => streamOne(opts, promptFor(i, a.promptTokens, a.vocab), t)
        .then((r) => { t.ended = true; return r; })));
    return { traces, done };
}

async function failover(single, cl) {
    const n = a.streams, T = a.failoverTokens;
    const ref = await traced(port.single, n, T);
    const refResults = await ref.done;
    console.error(`failover: reference on node (a): ${refResults.filter((r) => r.status === 200).length}/${n} ok`);
    const run = await traced(port.r, n, T);
    const killAfter = Math.max(4, T >> 2);
    // A stream may end early (greedy reaches an end-of-generation token): it is not waited for.
    while (!run.traces.every((t) => t.ended || t.ids.length >= killAfter)) await sleep(5);
    console.error(`failover: every stream has ${killAfter} tokens; SIGKILL replica a`);
    cl.a.killedOnPurpose = true;
    process.kill(cl.a.pid, 'SIGKILL');
    const tKill = performance.now(), wallKill = Date.now();
    const results = await run.done;
    await sleep(500);
    const log = fs.readFileSync(cl.r.log, 'utf8');
    // The router's first "was lost" line: when it knew (its log's clock is this machine's, UTC).
    const lost = /\[(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d\.\d{3})\] \[info\] request req-\d+: node 'a' was lost/.exec(log);
    const detectMs = lost ? Date.parse(`${lost[1]}T${lost[2]}Z`) - wallKill : NaN;
    const moved = new Set([...log.matchAll(/request (req-\d+): node 'a' was lost/g)].map((m) => m[1]));
    const rows = run.traces.map((t, i) => {
        const next = t.times.find((x) => x > tKill);
        const before = t.times.filter((x) => x <= tKill).length;
        return {
            reqId: t.reqId, moved: moved.has(t.reqId), tokens_before_kill: before,
            kill_to_next_token_ms: next === undefined ? NaN : next - tKill,
            same_as_single_node: JSON.stringify(t.ids) === JSON.stringify(ref.traces[i].ids),
            ok: results[i].status === 200 && !results[i].error, tokens: t.ids.length,
        };
    });
    const m = rows.filter((r) => r.moved), s = rows.filter((r) => !r.moved);
    const gap = (xs) => xs.map((r) => r.kill_to_next_token_ms).filter(Number.isFinite);
    return {
        streams: n, max_tokens: T, kill_after_tokens: killAfter, kill_to_router_knows_ms: detectMs,
        reference_ok: refResults.filter((r) => r.status === 200 && !r.error).length,
        moved: m.length, moved_ok: m.filter((r) => r.ok).length,
        moved_same_text: m.filter((r) => r.same_as_single_node).length,
        stayed: s.length, stayed_same_text: s.filter((r) => r.same_as_single_node).length,
        moved_kill_to_next_ms: { median: median(gap(m)), max: Math.max(...gap(m)) },
        stayed_kill_to_next_ms: { median: median(gap(s)), max: Math.max(...gap(s)) },
        migrated_counter: (await linkCounters(port.r)).migrated,
        rows,
    };
}

// ---- main ---------------------------------------------------------------------------------

const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '-');
// Another server on these ports would answer for ours: refuse to measure it.
for (const p of Object.values(port))
    if ((await get(p, '/health/live')).status !== 0) {
        console.error(`port ${p} is taken: pick another --base-port`);
        process.exit(1);
    }
const single = startSingle();
const cl = startCluster();
await waitFor('node (a) ready', async () => (await get(port.single, '/health/ready')).status === 200);
await waitFor('the router to see both replicas', () => clusterReady(port.r));
await warm(port.single);
await warm(port.r);
// Idle: what the heartbeats alone cost the router's links, serialized and on the wire.
const idleS = 10;
const i0 = await linkCounters(port.r), iw0 = clusterSocketBytes(cl.r.pid, clusterPorts);
const ic0 = [cl.a.pid, cl.b.pid, cl.r.pid].map(cpuSeconds);
await sleep(idleS * 1000);
const i1 = await linkCounters(port.r), iw1 = clusterSocketBytes(cl.r.pid, clusterPorts);
const ic1 = [cl.a.pid, cl.b.pid, cl.r.pid].map(cpuSeconds);
const idle = diff(i0, i1);
const hbMsgs = (idle['messages.in.heartbeat'] || 0) + (idle['messages.out.heartbeat'] || 0);
const hbBytes = (idle['bytes.in.heartbeat'] || 0) + (idle['bytes.out.heartbeat'] || 0);
const idleSummary = {
    seconds: idleS, heartbeat_messages_per_s: hbMsgs / idleS, heartbeat_serialized_bytes: hbBytes / hbMsgs,
    // in: the replicas' reports (their model's replica_view); out: the router's (no model).
    heartbeat_in_bytes: (idle['bytes.in.heartbeat'] || 0) / (idle['messages.in.heartbeat'] || NaN),
    heartbeat_out_bytes: (idle['bytes.out.heartbeat'] || 0) / (idle['messages.out.heartbeat'] || NaN),
    heartbeat_wire_bytes: (iw1 - iw0) / hbMsgs, frame_bytes: (iw1 - iw0 - hbBytes) / hbMsgs,
    idle_cpu_ms_per_s: Object.fromEntries(['a', 'b', 'r'].map((n, i) => [n, 1000 * (ic1[i] - ic0[i]) / idleS])),
};
console.log(`# idle ${idleS} s: the router's links carried ${idleSummary.heartbeat_messages_per_s.toFixed(1)} ` +
    `heartbeats/s (in + out), ${idleSummary.heartbeat_serialized_bytes.toFixed(0)} B serialized each (a replica's ` +
    `${idleSummary.heartbeat_in_bytes.toFixed(0)} B, the router's ${idleSummary.heartbeat_out_bytes.toFixed(0)} B), ` +
    `${idleSummary.heartbeat_wire_bytes.toFixed(0)} B on the wire each (${idleSummary.frame_bytes.toFixed(0)} B of ` +
    `framing); idle CPU ms/s: a ${idleSummary.idle_cpu_ms_per_s.a.toFixed(1)}, b ` +
    `${idleSummary.idle_cpu_ms_per_s.b.toFixed(1)}, router ${idleSummary.idle_cpu_ms_per_s.r.toFixed(1)}`);
console.log(`# cluster_bench: ${path.basename(a.model)}, ${a.streams} streams x ${a.promptTokens}-token ` +
    `prompts x ${a.maxTokens} greedy tokens, ${a.pairs} interleaved pairs; logs in ${logDir}`);
console.log('| run | config | tok/s | TTFT p50/p90 ms | ITL p50/p90 ms | CPU ms/token (all servers) | ' +
    'router CPU ms/token | stream msgs/token | stream bytes/token | router wire bytes/token | heartbeats in+out |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
const runs = [];
for (let i = 1; i <= a.pairs; ++i) {
    for (const r of [await runSingle(single), await runCluster(cl)]) {
        runs.push(r);
        const l = r.load;
        const hb = r.links ? (r.links['messages.in.heartbeat'] || 0) + (r.links['messages.out.heartbeat'] || 0) : NaN;
        console.log(`| ${i} | ${r.config} | ${f(l.tokens_per_s)} | ${f(l.ttft_ms.p50)} / ${f(l.ttft_ms.p90)} | ` +
            `${f(l.itl_ms.p50)} / ${f(l.itl_ms.p90)} | ${f(r.cpu_ms_per_token, 2)} | ${f(r.router_cpu_ms_per_token, 3)} | ` +
            `${f(r.stream_msgs_per_token, 4)} | ${f(r.stream_bytes_per_token)} | ${f(r.router_wire_bytes_per_token)} | ${f(hb, 0)} |` +
            (l.ok !== l.requests ? ` errors ${JSON.stringify(l.errors)}` : ''));
    }
}
// The wire bytes less the heartbeats' (their serialized bytes from the counters plus the framing
// measured idle): requests, stream batches and their framing.
for (const r of runs.filter((x) => x.config === 'b')) {
    const hbMsgs = (r.links['messages.in.heartbeat'] || 0) + (r.links['messages.out.heartbeat'] || 0);
    const hbBytes = (r.links['bytes.in.heartbeat'] || 0) + (r.links['bytes.out.heartbeat'] || 0);
    r.router_wire_bytes_per_token_less_heartbeats = r.router_wire_bytes_per_token -
        (hbBytes + hbMsgs * idleSummary.frame_bytes) / r.load.tokens;
}
const by = (c, g) => median(runs.filter((r) => r.config === c).map(g));
const ratios = [];
for (let i = 0; i + 1 < runs.length; i += 2) ratios.push({
    tps: runs[i + 1].load.tokens_per_s / runs[i].load.tokens_per_s,
    cpu: runs[i + 1].cpu_ms_per_token / runs[i].cpu_ms_per_token,
});
const summary = {
    tps: { a: by('a', (r) => r.load.tokens_per_s), b: by('b', (r) => r.load.tokens_per_s) },
    ttft_p50: { a: by('a', (r) => r.load.ttft_ms.p50), b: by('b', (r) => r.load.ttft_ms.p50) },
    itl_p50: { a: by('a', (r) => r.load.itl_ms.p50), b: by('b', (r) => r.load.itl_ms.p50) },
    cpu_ms_per_token: { a: by('a', (r) => r.cpu_ms_per_token), b: by('b', (r) => r.cpu_ms_per_token) },
    router_cpu_ms_per_token: by('b', (r) => r.router_cpu_ms_per_token),
    stream_msgs_per_token: by('b', (r) => r.stream_msgs_per_token),
    stream_bytes_per_token: by('b', (r) => r.stream_bytes_per_token),
    router_wire_bytes_per_token: by('b', (r) => r.router_wire_bytes_per_token),
    router_wire_bytes_per_token_less_heartbeats: by('b', (r) => r.router_wire_bytes_per_token_less_heartbeats),
    tps_ratio_b_over_a: median(ratios.map((x) => x.tps)),
    cpu_ratio_b_over_a: median(ratios.map((x) => x.cpu)),
};
console.log(`\nmedians: tok/s a ${f(summary.tps.a)}, b ${f(summary.tps.b)} (b/a per pair, median ` +
    `${f(summary.tps_ratio_b_over_a, 3)}); TTFT p50 a ${f(summary.ttft_p50.a)} ms, b ${f(summary.ttft_p50.b)} ms; ` +
    `ITL p50 a ${f(summary.itl_p50.a)} ms, b ${f(summary.itl_p50.b)} ms; CPU ms/token a ` +
    `${f(summary.cpu_ms_per_token.a, 2)}, b ${f(summary.cpu_ms_per_token.b, 2)} (b/a ${f(summary.cpu_ratio_b_over_a, 3)}, ` +
    `b - a ${f(summary.cpu_ms_per_token.b - summary.cpu_ms_per_token.a, 2)}), router ${f(summary.router_cpu_ms_per_token, 3)}; ` +
    `stream_batch ${f(summary.stream_msgs_per_token, 4)} msgs/token, ${f(summary.stream_bytes_per_token)} B/token ` +
    `(serialized); router's cluster sockets ${f(summary.router_wire_bytes_per_token)} B/token on the wire, ` +
    `${f(summary.router_wire_bytes_per_token_less_heartbeats)} B/token without the heartbeats`);

let fo = null;
if (a.failoverTokens > 0) {
    fo = await failover(single, cl);
    console.log(`\nfailover: ${fo.streams} streams x ${fo.max_tokens} tokens, replica a SIGKILLed once every ` +
        `stream had ${fo.kill_after_tokens} tokens; the router logged the loss ${f(fo.kill_to_router_knows_ms, 0)} ms ` +
        `after the kill (log clock, ms resolution); ${fo.moved} streams moved to b (${fo.moved_ok} ended ok, ` +
        `${fo.moved_same_text} with the single node's token ids; router counted ${fo.migrated_counter} migrated); ` +
        `kill -> next token on a moved stream: median ${f(fo.moved_kill_to_next_ms.median)} ms, max ` +
        `${f(fo.moved_kill_to_next_ms.max)} ms; on the ${fo.stayed} streams already on b: median ` +
        `${f(fo.stayed_kill_to_next_ms.median)} ms, max ${f(fo.stayed_kill_to_next_ms.max)} ms ` +
        `(${fo.stayed_same_text} with the single node's token ids)`);
}
if (a.json) fs.writeFileSync(a.json, JSON.stringify({ args: a, idle: idleSummary, runs, summary, failover: fo }, null, 2));
await stopServer(single);
for (const s of [cl.r, cl.b, cl.a]) await stopServer(s);
