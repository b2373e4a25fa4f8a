// One streamed greedy request against bitnet-server's SSE routes, shared by the load generators
// (loadgen.mjs, cluster_bench.mjs). Node's own http module only.
import http from 'node:http';

/// Prompt token ids for client `i`: distinct per client, deterministic across runs.
export function promptFor(i, n, vocab) {
    const out = [];
    let x = (i + 1) * 2654435761 % 4294967296;
    for (let k = 0; k < n; ++k) {
        x = (x * 1664525 + 1013904223) % 4294967296;
        out.push(3 + (x % (vocab - 3)));
    }
    return out;
}

/// One streamed request (with `a.apiKey`, sent as its bearer key). Resolves {status, ttft, gaps[], e2e, tokens, finish, error}. A `trace`
/// object ({reqId: '', ids: [], times: []}) is filled as events arrive: X-Request-Id, each token
/// id and the performance.now() of its event (ms), so the failover benchmark can watch streams
/// while they run and compare their texts and timestamps around a kill.
export function streamOne(a, prompt, trace = null) {
    return new Promise((resolve) => {
        // ignore_eos (a.ignoreEos): every stream runs to max_tokens, so that each level does the
        // same work; servers that do not know the field ignore it, and loadgen counts the streams
        // that got exactly max_tokens.
        const body = JSON.stringify({
            prompt, max_tokens: a.maxTokens, temperature: a.temperature ?? 0,
            ...(a.ignoreEos ? { ignore_eos: true } : {}),
        });
        const t0 = performance.now();
        let first = 0, last = 0, tokens = 0, finish = '', buf = '', settled = false;
        const gaps = [];
        const done = (r) => { if (!settled) { settled = true; resolve(r); } };
        const req = http.request({
            host: a.host, port: a.port, path: a.route, method: 'POST', agent: false,
            headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body),
                       ...(a.apiKey ? { Authorization: `Bearer ${a.apiKey}` } : {}) },
        }, (res) => {
            if (res.statusCode !== 200) {
                res.resume();
                res.on('end', () => done({ status: res.statusCode, error: `http ${res.statusCode}` }));
                return;
            }
            if (trace) trace.reqId = String(res.headers['x-request-id'] || '');
            res.setEncoding('utf8');
            res.on('data', (chunk) => {
                buf += chunk;
                let at;
                while ((at = buf.indexOf('\n\n')) >= 0) {
                    const ev = buf.slice(0, at);
                    buf = buf.slice(at + 2);
                    const now = performance.now();
                    if (ev.startsWith('event: token')) {
                        if (ev.includes('"token_id":null')) continue; // held-back text only
                        ++tokens;
                        if (first === 0) first = now; else gaps.push(now - last);
                        last = now;
                        if (trace) {
                            const m = /"token_id":(-?[0-9]+)/.exec(ev);
                            trace.ids.push(m ? Number(m[1]) : NaN);
                            trace.times.push(now);
                        }
                    } else if (ev.startsWith('event: done')) {
                        const m = /"finish_reason":"([a-z]+)"/.exec(ev);
                        finish = m ? m[1] : '?';
                    } else if (ev.startsWith('event: error')) {
                        finish = 'error';
                    }
                }
            });
            res.on('end', () => done({
                status: finish === 'error' ? 'sse-error' : 200, ttft: first - t0, gaps,
                e2e: performance.now() - t0, tokens, finish,
                error: finish === '' ? 'stream ended without done' : (finish === 'error' ? 'error event' : ''),
            }));
            res.on('error', (e) => done({ status: 'reset', error: String(e) }));
        });
        req.setTimeout(a.timeoutMs, () => req.destroy(new Error('timeout')));
        req.on('error', (e) => done({ status: 'conn', error: String(e) }));
        req.end(body);
    });
}

