// A hostile client's schema flood: `--requests` structured-output requests, `--concurrency` at a
// time, each with a distinct `--members`-member enum (40,000 members: an 840 KB body), without
// an API key; the server's peak RSS (sampled every 100 ms) and the statuses. The compiled-schema
// budget (`schema_cache_bytes`) bounds what is kept, so the peak stays near the budget plus the
// schemas being compiled at once. Node's own modules only.
//
//   node bench/schema_flood.mjs --server build/release/tools/bitnet-server --model models/X.gguf
//        [--requests 256] [--concurrency 8] [--members 40000] [--port 18490]
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { startServer, stopServer, waitFor, get } from './server_procs.mjs';

const a = { server: '', model: '', requests: 256, concurrency: 8, members: 40000, port: 18490 };
for (let i = 2; i < process.argv.length; i += 2) {
    const k = process.argv[i], v = process.argv[i + 1];
    if (k === '--server') a.server = v;
    else if (k === '--model') a.model = v;
    else if (k === '--requests') a.requests = Number(v);
    else if (k === '--concurrency') a.concurrency = Number(v);
    else if (k === '--members') a.members = Number(v);
    else if (k === '--port') a.port = Number(v);
    else { console.error(`unknown flag ${k}`); process.exit(2); }
}
if (!a.server || !a.model) { console.error('--server and --model are required'); process.exit(2); }

function post(obj) {
    return new Promise((resolve) => {
        const body = JSON.stringify(obj);
        const req = http.request({ host: '127.0.0.1', port: a.port, path: '/v1/completions', method: 'POST',
            agent: false, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } },
        (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); });
        req.setTimeout(600000, () => req.destroy(new Error('timeout')));
        req.on('error', () => resolve(0));
        req.end(body);
    });
}

const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flood-'));
const s = startServer(a.server, logDir, 'flood', ['--model', a.model, '--port', String(a.port),
    '--threads', '2', '--max-body-bytes', String(4 << 20), '--log-level', 'warn']);
await waitFor('ready', async () => (await get(a.port, '/health/ready')).status === 200, 120000);
const rss = () => {
    try { return Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${s.pid}/status`, 'utf8'))[1]); }
    catch { return 0; }
};
const start = rss();
let peak = start;
const sampler = setInterval(() => { peak = Math.max(peak, rss()); }, 100);
const statuses = {};
let next = 0;
const t0 = performance.now();
await Promise.all(Array.from({ length: a.concurrency }, async () => {
    for (let i = next++; i < a.requests; i = next++) {
        const schema = { enum: Array.from({ length: a.members }, (_, k) => `r${i}-m${k}-xxxx`) };
        const st = await post({ prompt: 'x', max_tokens: 4,
            response_format: { type: 'json_schema', json_schema: { name: 's', schema } } });
        statuses[st] = (statuses[st] || 0) + 1;
    }
}));
clearInterval(sampler);
const seconds = (performance.now() - t0) / 1000;
const stats = JSON.parse((await get(a.port, '/v1/stats')).body);
const endRss = rss();
await stopServer(s);
console.log(`# schema_flood: ${a.requests} requests x ${a.members}-member enums, ${a.concurrency} at a time, ${seconds.toFixed(0)} s`);
console.log(`statuses: ${JSON.stringify(statuses)}`);
console.log(`RSS start ${(start / 1024).toFixed(0)} MiB, peak ${(peak / 1024).toFixed(0)} MiB, end of run ${(endRss / 1024).toFixed(0)} MiB`);
console.log(`schema_cache at the end: ${JSON.stringify(stats.memory.tables.schema_cache)}`);
