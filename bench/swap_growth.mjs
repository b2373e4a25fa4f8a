// What each hot-swap leaves behind: `--swaps` hot-swaps of one model, each followed by one
// structured-output request (the schema cache then holds state for the new version's
// vocabulary), and the server's RSS after each, once the replaced version has drained and (by
// default, keep_standby 0) been unloaded at the end of the new version's probation (1 s here).
// The growth over all swaps should stay below one model's size. Node's own modules only.
//
//   node bench/swap_growth.mjs --server build/dev/tools/bitnet-server --model models/X.gguf
//        [--swaps 20] [--port 18495] [--keep-standby 0|1]
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { startServer, stopServer, waitFor, get, sleep } from './server_procs.mjs';

const a = { server: '', model: '', swaps: 20, port: 18495, keepStandby: 0 };
for (let i = 2; i < process.argv.length; i += 2) {
    const k = process.argv[i], v = process.argv[i + 1];
    if (k === '--server') a.server = v;
    else if (k === '--model') a.model = v;
    else if (k === '--swaps') a.swaps = Number(v);
    else if (k === '--port') a.port = Number(v);
    else if (k === '--keep-standby') a.keepStandby = Number(v);
    else { console.error(`unknown flag ${k}`); process.exit(2); }
}
if (!a.server || !a.model) { console.error('--server and --model are required'); process.exit(2); }

function post(p, obj) {
    return new Promise((resolve) => {
        const body = JSON.stringify(obj);
        const req = http.request({ host: '127.0.0.1', port: a.port, path: p, method: 'POST', agent: false,
            headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } },
        (res) => { let t = ''; res.on('data', (c) => { t += c; }); res.on('end', () => resolve({ status: res.statusCode, text: t })); });
        req.on('error', () => resolve({ status: 0, text: '' }));
        req.end(body);
    });
}

const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'swaps-'));
const s = startServer(a.server, logDir, 'swaps', ['--model', `m=${a.model}`, '--port', String(a.port),
    '--threads', '2', '--admin-open', '1', '--probation-s', '1', '--keep-standby', String(a.keepStandby),
    '--log-level', 'warn']);
await waitFor('ready', async () => (await get(a.port, '/health/ready')).status === 200, 120000);
const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${s.pid}/status`, 'utf8'))[1]);
const schema = () => post('/v1/completions', { model: 'm', prompt: 'x', max_tokens: 4,
    response_format: { type: 'json_schema', json_schema: { name: 'i', schema: { type: 'integer' } } } });
const versions = async () => JSON.parse((await get(a.port, '/v1/stats')).body).memory.live_objects.versions;
await schema();
const start = rss();
const after = [];
for (let i = 0; i < a.swaps; ++i) {
    const r = await post('/v1/models/load', { alias: 'm', path: a.model });
    if (r.status !== 202) throw new Error(`load answered ${r.status}: ${r.text}`);
    const op = JSON.parse(r.text).operation_id;
    await waitFor('the swap', async () => {
        const m = JSON.parse((await get(a.port, '/v1/models/m')).body);
        return m.operations.some((o) => o.id === op && o.finished_ms !== null);
    }, 120000);
    await schema();
    // The older versions are gone: the replaced one too once the probation ended, unless kept
    // resident for a rollback (keep_standby 1).
    const resident = a.keepStandby ? 2 : 1;
    await waitFor('the older versions gone', async () => (await versions()) <= resident, 120000);
    after.push(rss());
}
await sleep(500);
const end = rss();
await stopServer(s);
const model = fs.statSync(a.model).size / 1024;
console.log(`# swap_growth: ${a.swaps} hot-swaps of a ${(model / 1024).toFixed(1)} MiB model, one schema request after each, keep_standby ${a.keepStandby}`);
console.log(`RSS after the first schema ${start} KiB; after each swap: ${after.join(' ')} KiB; end ${end} KiB`);
console.log(`growth over all swaps ${end - start} KiB (${((end - start) / model).toFixed(2)} of the model's size); ` +
            `over the last ${a.swaps - 5} ${end - after[4]} KiB`);
