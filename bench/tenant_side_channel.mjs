// The prefix cache as a timing side channel between API keys (issue: the class of vLLM's
// CVE-2025-46570), measured against a running bitnet-server started with two user keys and an
// admin key (`--api-keys A,B --admin-key ADMIN`). Key A sends `--probes` different secret prompts
// of `--prompt` tokens; key B then probes, interleaved, each secret once (a prompt that starts
// with it) and as many fresh prompts of the same length, one token each. Every B probe is B's
// first sight of that prompt, so any difference between the two groups is A's cache showing
// through. Reports TTFT medians of both groups and their ratio (target: within 1.3x), key A's
// repeat of its own secret against its first send (target: <= 0.2x), and what B's usage and
// /v1/stats say (cached_tokens must be 0 for every B probe).
//
//   node bench/tenant_side_channel.mjs --port 8080 --key-a KEYA --key-b KEYB --admin ADMIN
//        [--prompt 768] [--probes 16] [--vocab 32000]
import http from 'node:http';
import { promptFor, streamOne } from './sse_stream.mjs';

const a = { host: '127.0.0.1', port: 8080, keyA: '', keyB: '', admin: '', prompt: 768, probes: 16,
            vocab: 32000 };
for (let i = 2; i < process.argv.length; i += 2) {
    const k = process.argv[i], v = process.argv[i + 1];
    if (k === '--host') a.host = v;
    else if (k === '--port') a.port = Number(v);
    else if (k === '--key-a') a.keyA = v;
    else if (k === '--key-b') a.keyB = v;
    else if (k === '--admin') a.admin = v;
    else if (k === '--prompt') a.prompt = Number(v);
    else if (k === '--probes') a.probes = Number(v);
    else if (k === '--vocab') a.vocab = Number(v);
    else { console.error(`unknown flag ${k}`); process.exit(2); }
}

const base = { host: a.host, port: a.port, route: '/v1/inference/stream', timeoutMs: 600000 };
const median = (xs) => { const s = [...xs].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };

function get(path, key) {
    return new Promise((resolve, reject) => {
        http.get({ host: a.host, port: a.port, path, agent: false,
                   headers: key ? { Authorization: `Bearer ${key}` } : {} }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c) => { text += c; });
            res.on('end', () => resolve({ status: res.statusCode, text }));
        }).on('error', reject);
    });
}

/// One streamed request of `key`: its time to first token (ms).
async function one(key, prompt, maxTokens) {
    const r = await streamOne({ ...base, apiKey: key, maxTokens }, prompt);
    if (r.status !== 200) throw new Error(`request failed: ${r.error}`);
    return r.ttft;
}

const secrets = [], fresh = [];
for (let i = 0; i < a.probes; ++i) {
    secrets.push(promptFor(1000 + i, a.prompt, a.vocab));
    fresh.push(promptFor(5000 + i, a.prompt, a.vocab));
}
const settle = () => new Promise((r) => setTimeout(r, 300)); // stats are polled every 20 ms
const hits = async () => { await settle(); return JSON.parse((await get('/v1/stats', a.admin)).text).prefix_cache.hit_tokens; };
const hitsBefore = await hits();
const aFirst = [], aAgain = [];
for (const s of secrets) {
    aFirst.push(await one(a.keyA, s, 1));
    aAgain.push(await one(a.keyA, s, 1));
}
const hitsAfterA = await hits();
const match = [], other = [];
for (let i = 0; i < a.probes; ++i) {
    // A prompt that starts with A's secret (its last token differs), and a fresh one.
    const m = [...secrets[i].slice(0, a.prompt - 1), 3 + (i % 7)];
    if (i % 2 === 0) { match.push(await one(a.keyB, m, 1)); other.push(await one(a.keyB, fresh[i], 1)); }
    else { other.push(await one(a.keyB, fresh[i], 1)); match.push(await one(a.keyB, m, 1)); }
}
const hitsAfterB = await hits();
const bStats = await get('/v1/stats', a.keyB);
const bMetrics = await get('/metrics', a.keyB);
const out = {
    prompt_tokens: a.prompt, probes: a.probes,
    key_a_first_ttft_ms: median(aFirst), key_a_repeat_ttft_ms: median(aAgain),
    key_a_repeat_ratio: median(aAgain) / median(aFirst),
    key_b_match_ttft_ms: median(match), key_b_other_ttft_ms: median(other),
    key_b_match_over_other: median(match) / median(other),
    hit_tokens_from_a_repeats: hitsAfterA - hitsBefore,
    hit_tokens_from_b_probes: hitsAfterB - hitsAfterA,
    key_b_stats_has_global_figures: /prefix_cache|"models"/.test(bStats.text),
    key_b_metrics_status: bMetrics.status,
};
console.log(JSON.stringify(out, null, 1));
const ratio = out.key_b_match_over_other;
const ok = ratio <= 1.3 && ratio >= 1 / 1.3 && out.key_a_repeat_ratio <= 0.2 &&
           out.hit_tokens_from_b_probes === 0 && !out.key_b_stats_has_global_figures &&
           out.key_b_metrics_status === 401;
console.log(ok ? 'side channel closed: all targets met' : 'TARGET MISSED');
process.exit(ok ? 0 : 1);
