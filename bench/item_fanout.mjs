// The item_reference fan-out of the attack round: one stored reply's message item, named as many
// times as a 1 MiB Responses request holds (14,978 for the round's 8 KB item), sent ROUNDS times;
// each answer's status, time and the server's RSS growth (from /proc/PID/status, so the server must
// run on this machine). The stored item is the reply of a first request of up to MAX_TOKENS tokens
// (its bytes are printed). Prints one JSON line.
//
//   node bench/item_fanout.mjs --port 8080 --pid PID [--max-tokens 2048] [--rounds 4]
import fs from 'node:fs';
import http from 'node:http';

const a = { port: 8080, pid: 0, maxTokens: 2048, rounds: 4 };
for (let i = 2; i < process.argv.length; i += 2) {
    const k = process.argv[i], v = Number(process.argv[i + 1]);
    if (k === '--port') a.port = v;
    else if (k === '--pid') a.pid = v;
    else if (k === '--max-tokens') a.maxTokens = v;
    else if (k === '--rounds') a.rounds = v;
    else { console.error(`unknown flag ${k}`); process.exit(2); }
}

function post(path, body) {
    return new Promise((resolve) => {
        const t0 = performance.now();
        const req = http.request({ host: '127.0.0.1', port: a.port, path, method: 'POST', agent: false,
            headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } },
        (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c) => { text += c; });
            res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - t0, text }));
        });
        req.on('error', (e) => resolve({ status: 0, ms: performance.now() - t0, text: String(e) }));
        req.end(body);
    });
}

const rssMb = () => {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${a.pid}/status`, 'utf8'));
    return Number(m[1]) / 1024;
};

const first = await post('/v1/responses', JSON.stringify({
    input: 'Tell me a long story.', max_output_tokens: a.maxTokens }));
if (first.status !== 200) { console.error(first.text); process.exit(1); }
const item = JSON.parse(first.text).output[0];
const itemBytes = JSON.stringify(item).length;
const ref = `{"type":"item_reference","id":"${item.id}"}`;
const n = Math.floor(((1 << 20) - 64) / (ref.length + 1));
const body = `{"max_output_tokens":1,"input":[${Array(n).fill(ref).join(',')}]}`;
const rss0 = rssMb();
const runs = [];
for (let r = 0; r < a.rounds; ++r) {
    const res = await post('/v1/responses', body);
    let param = null;
    try { param = JSON.parse(res.text).error?.message?.slice(0, 120) ?? null; } catch { /* not JSON */ }
    runs.push({ status: res.status, ms: +res.ms.toFixed(1), rss_growth_mb: +(rssMb() - rss0).toFixed(1), message: param });
}
const ms = runs.map((x) => x.ms).sort((x, y) => x - y);
console.log(JSON.stringify({ item_bytes: itemBytes, references: n, body_bytes: body.length,
    median_ms: ms[Math.floor(ms.length / 2)], max_ms: ms[ms.length - 1],
    max_rss_growth_mb: Math.max(...runs.map((x) => x.rss_growth_mb)), runs }));
