// Half-sent requests against a working client: ATTACKERS source addresses (127.0.0.2 and up, all
// loopback on Linux) each hold PER connections (the per-client cap) that send a request line and
// part of their headers, then one more header byte every DRIP ms, so they never finish and never
// go quiet; a connection the server closes is opened again at once, as an attacker retaking its
// slot would. Once they are all held for HOLD ms, one client at 127.0.0.1 sends PROBES sequential
// requests (a fresh connection each, GET /health/live) and the time each takes to answer.
// Prints a JSON line: the probes' statuses, median and max ms, how many attack connections were
// open when the probes ran, and the server's own reclaim count from /v1/stats. Loopback only.
//
//   node bench/half_sent.mjs --port 8080 [--attackers 5] [--per 256] [--drip-ms 2000]
//        [--hold-ms 5000] [--probes 32]
import http from 'node:http';
import net from 'node:net';

const a = { port: 8080, attackers: 5, per: 256, dripMs: 2000, holdMs: 5000, probes: 32 };
for (let i = 2; i < process.argv.length; i += 2) {
    const k = process.argv[i], v = Number(process.argv[i + 1]);
    if (k === '--port') a.port = v;
    else if (k === '--attackers') a.attackers = v;
    else if (k === '--per') a.per = v;
    else if (k === '--drip-ms') a.dripMs = v;
    else if (k === '--hold-ms') a.holdMs = v;
    else if (k === '--probes') a.probes = v;
    else { console.error(`unknown flag ${k}`); process.exit(2); }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let stopping = false;
let open = 0;
let opened = 0;
let closedByServer = 0;

/// One attacker connection from `localAddress`: opened again whenever the server closes it.
function hold(localAddress) {
    if (stopping) return;
    const sock = net.connect({ host: '127.0.0.1', port: a.port, localAddress });
    let timer = null;
    sock.on('connect', () => {
        ++open;
        ++opened;
        sock.write('POST /v1/tokenize HTTP/1.1\r\nHost: t\r\nX-Slow: ');
        timer = setInterval(() => sock.write('a'), a.dripMs);
    });
    sock.on('data', () => {}); // a 408/503 the server may send before it closes
    sock.on('error', () => {});
    sock.on('close', (hadError) => {
        if (timer) { clearInterval(timer); --open; }
        if (!stopping) { ++closedByServer; setTimeout(() => hold(localAddress), hadError ? 50 : 0); }
    });
}

function probe() {
    return new Promise((resolve) => {
        const t0 = performance.now();
        const req = http.get({ host: '127.0.0.1', port: a.port, path: '/health/live', agent: false },
            (res) => { res.resume(); res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - t0 })); });
        req.setTimeout(30000, () => req.destroy(new Error('timeout')));
        req.on('error', () => resolve({ status: 0, ms: performance.now() - t0 }));
    });
}

function stats() {
    return new Promise((resolve) => {
        http.get({ host: '127.0.0.1', port: a.port, path: '/v1/stats', agent: false }, (res) => {
            let b = '';
            res.on('data', (c) => { b += c; });
            res.on('end', () => { try { resolve(JSON.parse(b)); } catch { resolve({}); } });
        }).on('error', () => resolve({}));
    });
}

for (let k = 0; k < a.attackers; ++k)
    for (let i = 0; i < a.per; ++i) hold(`127.0.0.${k + 2}`);
await sleep(a.holdMs);
const before = await stats();
const openAtProbes = open;
const results = [];
for (let i = 0; i < a.probes; ++i) results.push(await probe());
const after = await stats();
stopping = true;
const ms = results.map((r) => r.ms).sort((x, y) => x - y);
const reclaimed = (s) => s?.connections?.reclaimed ?? null;
console.log(JSON.stringify({
    attackers: a.attackers, per: a.per, held_when_probed: openAtProbes, attack_opens: opened,
    attack_closed_by_server: closedByServer,
    probes: results.length, ok: results.filter((r) => r.status === 200).length,
    statuses: [...new Set(results.map((r) => r.status))],
    median_ms: +ms[Math.floor(ms.length / 2)].toFixed(1), max_ms: +ms[ms.length - 1].toFixed(1),
    reclaimed_during_probes: reclaimed(after) !== null ? reclaimed(after) - reclaimed(before) : null,
}));
process.exit(0);
