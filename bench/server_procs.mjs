// The processes a benchmark starts (bitnet-server nodes, a busy-loop child) and the HTTP polling
// it waits with, shared by cluster_bench.mjs and heartbeat_gaps.mjs. Every child is killed on
// every way out (normal exit, an uncaught error, SIGINT or SIGTERM), so no busy loop outlives a
// crashed run. Node's own modules only.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const servers = [];  // what startServer started: {name, proc, pid, log, exited, killedOnPurpose}
const children = []; // other children (adoptChild): killed the same way

/// Starts `server` with `args`, its stdout and stderr in `logDir`/`name`.log.
export function startServer(server, logDir, name, args) {
    const log = path.join(logDir, `${name}.log`);
    const fd = fs.openSync(log, 'w');
    const proc = spawn(server, args, { stdio: ['ignore', fd, fd] });
    fs.closeSync(fd);
    const s = { name, proc, pid: proc.pid, log, exited: false, killedOnPurpose: false };
    proc.on('exit', () => { s.exited = true; });
    servers.push(s);
    return s;
}

/// A child process of another kind (the busy loop) that must not outlive the benchmark.
export function adoptChild(proc) {
    children.push(proc);
    return proc;
}

/// SIGTERM, then SIGKILL after 10 s.
export async function stopServer(s) {
    s.killedOnPurpose = true; // its exit is no failure for waitFor
    if (s.exited) return;
    s.proc.kill('SIGTERM');
    for (let i = 0; i < 100 && !s.exited; ++i) await sleep(100);
    if (!s.exited) s.proc.kill('SIGKILL');
}

export function killAll() {
    for (const s of servers)
        if (!s.exited) try { s.proc.kill('SIGKILL'); } catch { /* gone */ }
    for (const c of children) try { c.kill('SIGKILL'); } catch { /* gone */ }
}
process.on('uncaughtException', (e) => { console.error(e); killAll(); process.exit(1); });
process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { killAll(); process.exit(130); });

/// GET 127.0.0.1:port/p: {status, body}, status 0 when the request failed or timed out.
export function get(port, p, timeoutMs = 10000) {
    return new Promise((resolve) => {
        const req = http.get({ host: '127.0.0.1', port, path: p, agent: false }, (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (c) => { body += c; });
            res.on('end', () => resolve({ status: res.statusCode, body }));
        });
        req.setTimeout(timeoutMs, () => req.destroy(new Error('timeout')));
        req.on('error', () => resolve({ status: 0, body: '' }));
    });
}

/// Polls `test` until it resolves true; throws after `timeoutMs`, or as soon as a server exits
/// that was not stopped on purpose (naming its log).
export async function waitFor(what, test, timeoutMs = 600000) {
    const t0 = Date.now();
    while (Date.now() - t0 < timeoutMs) {
        if (await test()) return;
        for (const s of servers)
            if (s.exited && !s.killedOnPurpose) throw new Error(`${s.name} exited (log: ${s.log})`);
        await sleep(250);
    }
    throw new Error(`timed out waiting for ${what}`);
}
