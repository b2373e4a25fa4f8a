// The Metrics view: every two seconds while it is open, /v1/stats (rates, queues, KV blocks)
// and /metrics (the time-to-first-token and inter-token histograms, whose percentiles are taken
// over the samples since the previous poll), drawn as small charts; and the recent errors the
// page saw.
import { el, getJSON, getText, onErrors } from './api.js';
import { LineChart } from './charts.js';

const $ = (id) => document.getElementById(id);
let charts = null;
let timer = null;
let previous = new Map(); // histogram name -> Map(le -> cumulative count), last poll

/// The cumulative bucket counts of histogram `name` in Prometheus text, summed over its label
/// sets (models, routes).
export function buckets(text, name) {
  const out = new Map();
  const prefix = `${name}_bucket{`;
  for (const line of text.split('\n')) {
    if (!line.startsWith(prefix)) continue;
    const le = /le="([^"]+)"/.exec(line)?.[1];
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (le === undefined || !Number.isFinite(value)) continue;
    const bound = le === '+Inf' ? Infinity : Number(le);
    out.set(bound, (out.get(bound) ?? 0) + value);
  }
  return out;
}

/// The q-quantile of cumulative buckets (linear inside the bucket, as Prometheus's
/// histogram_quantile does); null without samples.
export function quantile(cumulative, q) {
  const bounds = [...cumulative.keys()].sort((a, b) => a - b);
  const total = cumulative.get(Infinity) ?? 0;
  if (!total) return null;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const b of bounds) {
    const c = cumulative.get(b);
    if (c >= rank) {
      if (b === Infinity) return lower;
      return lower + (b - lower) * ((rank - below) / Math.max(c - below, 1e-12));
    }
    lower = b;
    below = c;
  }
  return lower;
}

function since(name, now) {
  const before = previous.get(name);
  previous.set(name, now);
  if (!before) return now;
  const delta = new Map();
  for (const [b, c] of now) delta.set(b, Math.max(0, c - (before.get(b) ?? 0)));
  return (delta.get(Infinity) ?? 0) > 0 ? delta : new Map();
}

function percentilesMs(text, name) {
  const window = since(name, buckets(text, name));
  return [0.5, 0.9, 0.99].map((q) => {
    const v = quantile(window, q);
    return v === null ? null : v * 1000;
  });
}

async function poll() {
  try {
    const stats = await getJSON('/v1/stats', 'operator');
    const models = stats.models ?? [];
    const sum = (f) => models.reduce((a, m) => a + f(m), 0);
    charts.rate.push([stats.tokens_per_second?.generated?.['10s'] ?? null,
                      stats.tokens_per_second?.prompt?.['10s'] ?? null]);
    charts.queue.push([sum((m) => (m.waiting?.high ?? 0) + (m.waiting?.normal ?? 0) +
                                  (m.waiting?.low ?? 0)), sum((m) => m.running ?? 0)]);
    const total = sum((m) => m.kv_blocks_total ?? 0);
    charts.kv.push([total ? (100 * sum((m) => m.kv_blocks_used ?? 0)) / total : null]);
  } catch { /* the failure is in the recent errors already */ }
  try {
    const text = await getText('/metrics', 'operator');
    charts.ttft.push(percentilesMs(text, 'bitnet_time_to_first_token_seconds'));
    charts.itl.push(percentilesMs(text, 'bitnet_inter_token_latency_seconds'));
  } catch { /* as above */ }
}

export function initMetrics() {
  const box = $('charts');
  charts = {
    rate: new LineChart(box, 'Tokens/s', ['generated', 'prompt']),
    queue: new LineChart(box, 'Queue depth', ['waiting', 'running']),
    kv: new LineChart(box, 'KV cache use', ['used'], ' %'),
    ttft: new LineChart(box, 'Time to first token', ['p50', 'p90', 'p99'], ' ms'),
    itl: new LineChart(box, 'Inter-token latency', ['p50', 'p90', 'p99'], ' ms'),
  };
  onErrors((list) => {
    $('recent-errors').replaceChildren(
      ...list.map((e) => el('li', `${e.at.toLocaleTimeString()} ${e.text}`)));
  });
}

/// Polls while the view is shown.
export function showMetrics(on) {
  clearInterval(timer);
  timer = null;
  if (!on) return;
  poll();
  timer = setInterval(poll, 2000);
}
