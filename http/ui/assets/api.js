// The page's one way to the server: same-origin fetches with the key the user typed (kept for
// this tab only, in sessionStorage), errors turned into Error objects carrying the server's
// message, and a record of recent failures for the Metrics view.

const keyFields = { user: 'api-key', admin: 'admin-key' };
const recent = [];
const listeners = new Set();

/// The key of `role` ('user' or 'admin') as typed.
export function keyOf(role) {
  const el = document.getElementById(keyFields[role]);
  return el ? el.value.trim() : '';
}

/// Restores the keys of this tab and keeps them as they are typed. Never localStorage: a key
/// must not outlive the tab.
export function bindKeys() {
  for (const id of Object.values(keyFields)) {
    const el = document.getElementById(id);
    el.value = sessionStorage.getItem(`bitnet.${id}`) ?? '';
    el.addEventListener('input', () => sessionStorage.setItem(`bitnet.${id}`, el.value));
  }
}

/// The key a request of `role` goes with: 'admin' only the admin key (a refusal shows the user
/// that it is missing); 'operator' (the console's reads) the admin key when typed, since it sees
/// every tenant's figures and the files behind versions, else the user key; 'user' the user key,
/// else the admin key (which opens user routes too).
function keyFor(role) {
  if (role === 'admin') return keyOf('admin');
  if (role === 'operator') return keyOf('admin') || keyOf('user');
  return keyOf('user') || keyOf('admin');
}

function headersFor(role, json) {
  const h = {};
  const key = keyFor(role);
  if (key) h.Authorization = `Bearer ${key}`;
  if (json) h['Content-Type'] = 'application/json';
  return h;
}

/// What went wrong, as a line for the user: the server's own message when it sent one.
async function failure(res, path) {
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = await res.json();
    const m = body?.error?.message ?? body?.error;
    if (typeof m === 'string') message = `${res.status}: ${m}`;
  } catch { /* not JSON: the status line says enough */ }
  const err = new Error(message);
  err.status = res.status;
  remember(`${path}: ${message}`);
  return err;
}

/// Notes a failure for the Metrics view's list (the newest 50).
export function remember(text) {
  recent.unshift({ at: new Date(), text });
  recent.length = Math.min(recent.length, 50);
  for (const f of listeners) f(recent);
}

export function onErrors(f) {
  listeners.add(f);
  f(recent);
}

/// A request; resolves to the Response when its status is 2xx, else throws the server's error.
export async function request(method, path, { body, role = 'user', signal } = {}) {
  const res = await fetch(path, {
    method,
    headers: headersFor(role, body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
    cache: 'no-store',
  });
  if (!res.ok) throw await failure(res, path);
  return res;
}

export async function getJSON(path, role = 'user') {
  return (await request('GET', path, { role })).json();
}

export async function getText(path, role = 'user') {
  return (await request('GET', path, { role })).text();
}

/// Server-sent events of a POST: calls `onEvent(data)` for each `data:` line's payload (a
/// string) until the stream ends or `signal` aborts it.
export async function streamEvents(path, body, onEvent, signal) {
  const res = await request('POST', path, { body, signal });
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block.split('\n').filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart()).join('\n');
      if (data) onEvent(data);
    }
  }
}

/// Asks the user to confirm `text` in the page's own dialog; resolves true on Confirm.
export function confirmAction(text) {
  const dialog = document.getElementById('confirm');
  document.getElementById('confirm-text').textContent = text;
  dialog.returnValue = ''; // Escape closes it without a button: not a confirmation
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true });
    dialog.showModal();
  });
}

/// An element with text (never markup) and optional class.
export function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
