#!/usr/bin/env node
// Heartbeat gaps under compute load (issue 28's goal: with 32 streams decoding and one extra
// CPU-bound process, heartbeat gaps p99 <= 2x the interval, no false `suspect`). Two nodes on
// this machine: `a` serves the model with the default thread count (every core the process may
// use), `r` is a router without a model that joined it; clients stream through `r`, so `a`'s
// cores decode while both exchange heartbeats. Phases, each `--seconds` long, in order:
//   quiet   nothing runs;
//   loaded  `--streams` greedy streams decode without pause through `r`, and a busy-loop child
//           process (the other tenant) runs.
// Per phase and direction (a's heartbeats as r received them, r's as a received them), from the
// difference of bitnet_cluster_heartbeat_gap_seconds before and after the phase: the count, the
// mean gap, the share of gaps within 2x the interval, the bucket holding the 99th percentile,
// and bitnet_cluster_suspect_total.
//   node bench/heartbeat_gaps.mjs --server build/release/tools/bitnet-server --model M.gguf
//        [--vocab 128256] [--streams 32] [--seconds 60] [--heartbeat-ms 250] [--base-port 28600]
//        [--spin N]   (compute_spin_count of both nodes; default: the server's)
import { fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { adoptChild, get, killAll, sleep, startServer as startServerIn, waitFor }
    from './server_procs.mjs';
import { promptFor, streamOne } from './sse_stream.mjs';

if (process.argv[2] === '__hog') { for (;;); } // the CPU-bound child

const a = { server: '', model: '', vocab: 128256, streams: 32, seconds: 60, heartbeatMs: 250,
            basePort: 28600, spin: -1 };
for (let i = 2; i < process.argv.length; i += 2) {
    const k = process.argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    if (!(k in a)) { console.error(`unknown flag ${process.argv[i]}`); process.exit(2); }
    a[k] = typeof a[k] === 'number' ? Number(process.argv[i + 1]) : process.argv[i + 1];
}
if (!a.server || !a.model) { console.error('--server and --model are required'); process.exit(2); }

const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'heartbeat-gaps-'));
const startServer = (name, args) => startServerIn(a.server, logDir, name, args);

/// The gap histogram and suspect count of `peer` as node `port` reports them.
async function series(port, peer) {
    const text = (await get(port, '/metrics')).body;
    const out = { buckets: new Map(), count: 0, sum: 0, suspect: 0 };
    for (const line of text.split('\n')) {
        if (!line.includes(`peer="${peer}"`)) continue;
        const v = Number(line.slice(line.lastIndexOf(' ') + 1));
        if (line.startsWith('bitnet_cluster_heartbeat_gap_seconds_bucket{')) {
            const le = line.match(/le="([^"]+)"/)[1];
            out.buckets.set(le === '+Inf' ? Infinity : Number(le), v);
        } else if (line.startsWith('bitnet_cluster_heartbeat_gap_seconds_count{')) out.count = v;
        else if (line.startsWith('bitnet_cluster_heartbeat_gap_seconds_sum{')) out.sum = v;
        else if (line.startsWith('bitnet_cluster_suspect_total{')) out.suspect = v;
    }
    return out;
}
function summary(before, after) {
    const count = after.count - before.count;
    const les = [...after.buckets.keys()].sort((x, y) => x - y);
    const cum = les.map((le) => [le, after.buckets.get(le) - (before.buckets.get(le) ?? 0)]);
    const within = (x) => { for (const [le, n] of cum) if (le >= x) return n; return count; };
    let p99 = Infinity;
    for (const [le, n] of cum) if (n >= 0.99 * count) { p99 = le; break; }
    let max = 0;
    for (const [le, n] of cum) if (n < count) max = le; // the largest bucket bound below some gap
    const twice = 2 * a.heartbeatMs / 1000;
    return { count, mean: count ? (after.sum - before.sum) / count : NaN,
             withinTwice: count ? within(twice) / count : NaN, p99, maxAbove: max,
             suspect: after.suspect - before.suspect };
}

const port = { a: a.basePort, r: a.basePort + 1 };
const cport = { a: a.basePort + 10, r: a.basePort + 11 };
const common = ['--cluster-insecure', '--cluster-insecure-acknowledged', '--log-level', 'info',
                '--cluster-heartbeat-ms', String(a.heartbeatMs),
                ...(a.spin >= 0 ? ['--compute-spin-count', String(a.spin)] : [])];
startServer('a', ['--node-name', 'a', '--port', String(port.a), '--model', a.model,
                  '--cluster-listen', `127.0.0.1:${cport.a}`, ...common]);
startServer('r', ['--node-name', 'r', '--port', String(port.r), '--cluster-listen',
                  `127.0.0.1:${cport.r}`, '--join', `127.0.0.1:${cport.a}`, ...common]);
await waitFor('a ready', async () => (await get(port.a, '/health/ready')).status === 200);
await waitFor('r routes to a', async () => (await get(port.r, '/health/ready')).status === 200);
await sleep(2000);

/// Measures one phase: `load()` starts what runs during it (and returns how to stop it, which
/// runs after the figures are read, so the load lasts the whole phase).
async function phase(name, load) {
    const stop = await load();
    const before = { ra: await series(port.r, 'a'), ar: await series(port.a, 'r') };
    await sleep(a.seconds * 1000);
    const after = { ra: await series(port.r, 'a'), ar: await series(port.a, 'r') };
    stop();
    for (const [dir, label] of [['ra', "a's heartbeats at r"], ['ar', "r's heartbeats at a"]]) {
        const s = summary(before[dir], after[dir]);
        console.log(`| ${name} | ${label} | ${s.count} | ${(s.mean * 1000).toFixed(1)} | ` +
                    `${(100 * s.withinTwice).toFixed(2)} % | <= ${s.p99 * 1000} ms | ` +
                    `${s.maxAbove * 1000} ms | ${s.suspect} |`);
    }
}

console.log(`heartbeat ${a.heartbeatMs} ms, ${a.seconds} s per phase, ${a.streams} streams, ` +
            `spin ${a.spin >= 0 ? a.spin : 'default'} ` +
            `(node ${process.version}, ${os.cpus().length} CPUs: ${os.cpus()[0].model})`);
console.log('| phase | direction | gaps | mean ms | within 2x | p99 bucket | largest gap above | suspect |');
console.log('|---|---|---|---|---|---|---|---|');
await phase('quiet', async () => () => {});
await phase(`${a.streams} streams + hog`, async () => {
    const hog = adoptChild(fork(new URL(import.meta.url).pathname, ['__hog'], { stdio: 'ignore' }));
    let running = true;
    const client = { host: '127.0.0.1', port: port.r, route: '/v1/inference/stream',
                     maxTokens: 128, timeoutMs: 600000 };
    for (let i = 0; i < a.streams; ++i)
        (async () => {
            while (running) await streamOne(client, promptFor(i, 16, a.vocab));
        })();
    // Streams decoding before the phase's figures start.
    await waitFor('streams decoding', async () => {
        const st = JSON.parse((await get(port.a, '/v1/stats')).body || '{"models":[]}');
        return (st.models[0]?.running ?? 0) >= Math.min(a.streams, 32);
    });
    return () => { running = false; hog.kill('SIGKILL'); };
});
killAll();
process.exit(0);
