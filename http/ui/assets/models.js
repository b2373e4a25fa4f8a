// The Models view: each alias with its versions and their states, the recent operations, and
// the operator's actions (load a version, roll back, unload), each asked for confirmation in the
// page's dialog and sent with the admin key. The server decides who may: without the admin key
// it refuses, and the refusal is shown.
import { confirmAction, el, getJSON, remember, request } from './api.js';

const $ = (id) => document.getElementById(id);
const BUSY = new Set(['loading', 'validating', 'warming', 'draining']);
let watching = null;

function status(text, isError = false) {
  const s = $('models-status');
  s.textContent = text;
  s.className = isError ? 'error' : '';
}

function cells(tr, values) {
  for (const v of values) tr.append(el('td', v ?? ''));
  return tr;
}

function when(unixSeconds) {
  return unixSeconds ? new Date(unixSeconds * 1000).toLocaleString() : '';
}

function versionsTable(detail) {
  const t = el('table', undefined, 'versions');
  t.setAttribute('aria-label', `Versions of ${detail.id}`);
  t.append(headRow(['version', 'state', 'device', 'format', 'loaded', 'note']));
  for (const v of detail.versions ?? []) {
    const tr = el('tr');
    tr.dataset.version = v.version;
    tr.dataset.state = v.state;
    const serving = v.state === 'ready' && v.version === detail.version;
    cells(tr, [v.version, serving ? 'ready (serving)' : v.state, v.device, v.format,
               when(v.loaded_at), v.failure ?? '']);
    t.append(tr);
  }
  return t;
}

function headRow(names) {
  const tr = el('tr');
  for (const n of names) tr.append(el('th', n));
  return tr;
}

function operationsList(detail) {
  const ops = (detail.operations ?? []).slice(-5).reverse();
  const ul = el('ul', undefined, 'operations');
  ul.setAttribute('aria-label', `Operations on ${detail.id}`);
  for (const o of ops)
    ul.append(el('li', `${o.id} ${o.kind} ${o.version ?? ''} ${o.state}` +
                       (o.swap_ms ? ` (flip ${o.swap_ms} ms)` : '') +
                       (o.failure ? `: ${o.failure}` : '')));
  return ul;
}

async function operate(what, method, path, body) {
  status(`${what}: waiting for confirmation`);
  if (!(await confirmAction(`${what}?`))) {
    status(`${what}: cancelled`);
    return;
  }
  try {
    const res = await request(method, path, { body, role: 'admin' });
    const ticket = await res.json();
    status(`${what}: accepted (${ticket.operation_id ?? 'operation started'})`);
    watch();
  } catch (e) {
    status(`${what}: refused, ${e.message}`, true);
  }
}

function card(detail) {
  const section = el('section', undefined, 'model');
  section.dataset.alias = detail.id;
  section.append(el('h3', detail.id));
  section.append(el('p', [detail.architecture, detail.format, detail.device,
                          detail.parameters ? `${(detail.parameters / 1e6).toFixed(1)}M parameters`
                                            : null,
                          detail.context_length ? `context ${detail.context_length}` : null]
                          .filter(Boolean).join(' · '), 'hint'));
  section.append(versionsTable(detail), operationsList(detail));
  const actions = el('div', undefined, 'row');
  const rollback = el('button', 'Roll back');
  rollback.type = 'button';
  rollback.setAttribute('aria-label', `Roll back ${detail.id}`);
  rollback.addEventListener('click', () =>
    operate(`Roll back ${detail.id} to its previous version`, 'POST',
            `/v1/models/${encodeURIComponent(detail.id)}/rollback`));
  const unload = el('button', 'Unload');
  unload.type = 'button';
  unload.setAttribute('aria-label', `Unload ${detail.id}`);
  unload.addEventListener('click', () =>
    operate(`Unload ${detail.id}`, 'DELETE', `/v1/models/${encodeURIComponent(detail.id)}`));
  actions.append(rollback, unload);
  section.append(actions);
  return section;
}

/// Reads every alias again; resolves whether any version is still changing state.
export async function refreshModels() {
  const box = $('models-list');
  try {
    const list = await getJSON('/v1/models', 'operator');
    const details = await Promise.all((list.data ?? []).map((m) =>
      getJSON(`/v1/models/${encodeURIComponent(m.id)}`, 'operator')));
    box.replaceChildren(...details.map(card));
    if (!details.length) box.replaceChildren(el('p', 'No model is loaded.'));
    return details.some((d) => (d.versions ?? []).some((v) => BUSY.has(v.state)) ||
                               (d.operations ?? []).some((o) => BUSY.has(o.state)));
  } catch (e) {
    box.replaceChildren(el('p', `The models could not be read: ${e.message}`, 'error'));
    return false;
  }
}

/// Refreshes every second while an operation runs (a minute at most), then once more.
function watch() {
  clearTimeout(watching);
  let left = 60;
  const tick = async () => {
    const busy = await refreshModels();
    if (busy && --left > 0) watching = setTimeout(tick, 1000);
  };
  watching = setTimeout(tick, 300);
}

export function initModels() {
  $('load-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const alias = $('load-alias').value.trim();
    const body = { alias, path: $('load-path').value.trim() };
    const version = $('load-version').value.trim();
    if (version) body.version = version;
    operate(`Load ${body.path} as ${alias}`, 'POST', '/v1/models/load', body);
  });
}

export function showModels() {
  refreshModels().catch((e) => remember(`models: ${e.message}`));
}
