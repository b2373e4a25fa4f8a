#!/usr/bin/env node
// Plain HTTP against HTTPS on the same server build (docs/BENCHMARKING.md rules: interleaved
// A B A B in one sitting, medians of the per-pair ratios with the range). Two bitnet-server
// processes run side by side, one plain and one with --tls-cert/--tls-key; each round sends GET
// `--path` from `--concurrency` clients for `--seconds` to one, then the other. Two modes:
//   reuse  keep-alive connections (the steady state: TLS record cost only)
//   fresh  a new connection per request (TCP + TLS handshake every time)
// Reports requests/s (wall clock: noisy on a shared machine) and the server's CPU time per
// request (user + system from /proc/PID/stat: the load generator and other tenants do not enter
// it), per pair and as medians of the TLS/plain ratios. Node's own http/https modules only.
//
//   node bench/https_rate.mjs --plain-port P --plain-pid PID --tls-port Q --tls-pid PID2
//        --ca ca.crt [--mode reuse|fresh] [--concurrency 4] [--seconds 5] [--pairs 5]
//        [--path /health/live] [--tls-scheme http]
// --tls-scheme http speaks plain HTTP to the second server too: two plain builds A/B (e.g. main's
// bitnet-server against this one, to see that plain HTTP did not get slower).
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';

function parseArgs(argv) {
    const a = { mode: 'reuse', concurrency: 4, seconds: 5, pairs: 5, path: '/health/live', tlsScheme: 'https', ca: '-' };
    for (let i = 2; i < argv.length; i += 2) {
        const k = argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
        a[k] = ['mode', 'ca', 'path', 'tlsScheme'].includes(k) ? argv[i + 1] : Number(argv[i + 1]);
    }
    for (const k of ['plainPort', 'plainPid', 'tlsPort', 'tlsPid'])
        if (!a[k]) { console.error(`missing --${k.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase())}`); process.exit(2); }
    return a;
}

const hz = 100; // CLK_TCK on Linux
function cpuTicks(pid) {
    const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
    return Number(rest[11]) + Number(rest[12]); // utime + stime (fields 14, 15)
}

function get(mod, opts) {
    return new Promise((resolve) => {
        const req = mod.get(opts, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode === 200));
        });
        req.on('error', () => resolve(false));
    });
}

/// `concurrency` loops for `seconds` against one server: requests done, errors, CPU per request.
async function run(a, second) {
    const tls = second && a.tlsScheme === 'https';
    const mod = tls ? https : http;
    const port = second ? a.tlsPort : a.plainPort;
    const pid = second ? a.tlsPid : a.plainPid;
    const agent = a.mode === 'reuse' ? new mod.Agent({ keepAlive: true, maxSockets: a.concurrency }) : false;
    const ca = tls ? fs.readFileSync(a.ca) : undefined;
    const opts = { host: '127.0.0.1', port, path: a.path, agent, ca, servername: 'localhost' };
    let ok = 0, errors = 0;
    const t0 = process.hrtime.bigint(), c0 = cpuTicks(pid);
    const until = Date.now() + a.seconds * 1000;
    await Promise.all(Array.from({ length: a.concurrency }, async () => {
        while (Date.now() < until) (await get(mod, opts)) ? ++ok : ++errors;
    }));
    const wall = Number(process.hrtime.bigint() - t0) / 1e9, c1 = cpuTicks(pid);
    if (agent) agent.destroy();
    return { rps: ok / wall, errors, cpuUsPerReq: ((c1 - c0) / hz) * 1e6 / Math.max(ok, 1) };
}

const median = (xs) => { const s = [...xs].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };

const a = parseArgs(process.argv);
await run(a, false); // warm-up both (connections, caches)
await run(a, true);
const rps = [], cpu = [];
for (let i = 0; i < a.pairs; ++i) {
    const p = await run(a, false), t = await run(a, true);
    rps.push(t.rps / p.rps);
    cpu.push(t.cpuUsPerReq / p.cpuUsPerReq);
    console.log(`pair ${i + 1}: plain ${p.rps.toFixed(0)} req/s ${p.cpuUsPerReq.toFixed(1)} us CPU/req` +
        ` (errors ${p.errors}) | ${a.tlsScheme === 'https' ? 'tls' : 'second'} ${t.rps.toFixed(0)} req/s ${t.cpuUsPerReq.toFixed(1)} us CPU/req` +
        ` (errors ${t.errors})`);
}
const range = (xs) => `${Math.min(...xs).toFixed(3)}..${Math.max(...xs).toFixed(3)}`;
console.log(`mode ${a.mode}, ${a.concurrency} clients, ${a.seconds} s per run, ${a.pairs} pairs, GET ${a.path}`);
console.log(`req/s tls/plain: median ${median(rps).toFixed(3)} (range ${range(rps)})`);
console.log(`server CPU per request tls/plain: median ${median(cpu).toFixed(3)} (range ${range(cpu)})`);
