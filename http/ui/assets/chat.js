// The chat playground: a streamed /v1/chat/completions turn per message, with Stop, the
// sampling settings, tools and a response schema, time to first token and tokens/s under each
// reply, and the conversations kept in this browser (localStorage, the newest 30). Everything a
// user or the model wrote is shown as text (textContent): no markup of theirs is ever parsed.
import { el, getJSON, remember, streamEvents } from './api.js';

const STORE = 'bitnet.conversations';
const KEEP = 30;
const $ = (id) => document.getElementById(id);

let conversations = [];
let current = null;
let running = null; // the AbortController of the turn in flight

function load() {
  try {
    const parsed = JSON.parse(localStorage.getItem(STORE) ?? '[]');
    conversations = Array.isArray(parsed) ? parsed : [];
  } catch {
    conversations = [];
  }
}

function save() {
  conversations = conversations.slice(0, KEEP);
  try {
    localStorage.setItem(STORE, JSON.stringify(conversations));
  } catch { /* storage full or off: the conversation lives on in this tab */ }
}

function newConversation() {
  current = { id: crypto.randomUUID(), title: 'New chat', messages: [] };
  conversations.unshift(current);
  save();
  renderList();
  renderTranscript();
}

function renderList() {
  const list = $('conversation-list');
  list.replaceChildren();
  for (const c of conversations) {
    const item = el('li');
    const open = el('button', c.title, c === current ? 'current' : '');
    open.type = 'button';
    open.addEventListener('click', () => {
      if (running) return;
      current = c;
      renderList();
      renderTranscript();
    });
    const remove = el('button', '×', 'remove');
    remove.type = 'button';
    remove.setAttribute('aria-label', `Delete ${c.title}`);
    remove.addEventListener('click', () => {
      if (running && c === current) return;
      conversations = conversations.filter((x) => x !== c);
      if (c === current) current = conversations[0] ?? null;
      save();
      if (!current) newConversation();
      renderList();
      renderTranscript();
    });
    item.append(open, remove);
    list.append(item);
  }
}

/// One transcript entry: who wrote it and a text body, plus the reply's details when it has any.
function entry(message) {
  const li = el('li', undefined, `turn ${message.role}`);
  li.append(el('span', message.role === 'user' ? 'You' : 'Model', 'who'));
  const body = el('div', message.content ?? '', 'content');
  li.append(body);
  const extras = el('div', undefined, 'extras');
  li.append(extras);
  const stats = el('div', '', 'stats');
  li.append(stats);
  const view = { li, body, extras, stats };
  if (message.role === 'assistant') showDetails(view, message);
  return view;
}

function showDetails(view, m) {
  view.extras.replaceChildren();
  for (const call of m.tool_calls ?? []) {
    const box = el('div', undefined, 'tool-call');
    box.append(el('span', `tool call: ${call.function?.name ?? ''}`, 'label'));
    box.append(el('pre', call.function?.arguments ?? ''));
    view.extras.append(box);
  }
  if (m.structured) {
    let pretty = m.content ?? '';
    let valid = true;
    try {
      pretty = JSON.stringify(JSON.parse(pretty), null, 2);
    } catch {
      valid = false;
    }
    const box = el('div', undefined, 'structured');
    box.append(el('span', valid ? 'structured output (JSON)' : 'structured output (not valid JSON)',
                  'label'));
    box.append(el('pre', pretty));
    view.extras.append(box);
  }
  const s = m.stats;
  if (s) {
    const parts = [];
    if (s.ttft_ms !== undefined) parts.push(`first token ${s.ttft_ms.toFixed(0)} ms`);
    if (s.tokens_per_s !== undefined) parts.push(`${s.tokens_per_s.toFixed(1)} tokens/s`);
    if (s.tokens !== undefined) parts.push(`${s.tokens} tokens`);
    if (s.finish) parts.push(s.finish);
    view.stats.textContent = parts.join(' · ');
  }
}

function renderTranscript() {
  const t = $('transcript');
  t.replaceChildren();
  for (const m of current?.messages ?? []) t.append(entry(m).li);
}

/// A textarea's JSON, or undefined when empty; throws with the field's name when it is not JSON.
function jsonField(id, what) {
  const text = $(id).value.trim();
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${what} is not valid JSON: ${e.message}`);
  }
}

function number(id) {
  const v = $(id).value.trim();
  return v === '' ? undefined : Number(v);
}

function requestOf(history) {
  const body = { model: $('chat-model').value || undefined, stream: true,
                 stream_options: { include_usage: true } };
  const messages = [];
  const system = $('chat-system').value.trim();
  if (system) messages.push({ role: 'system', content: system });
  for (const m of history) {
    // Calls the model made are sent back as their text: the page runs no tools, so no tool
    // message could follow them.
    const calls = (m.tool_calls ?? []).map((c) => `${c.function.name}(${c.function.arguments})`);
    const content = [m.content, ...calls].filter(Boolean).join('\n');
    // A reply that failed or was stopped before its first token said nothing to send back.
    if (content || m.role === 'user') messages.push({ role: m.role, content });
  }
  body.messages = messages;
  for (const [field, id] of [['temperature', 'chat-temperature'], ['top_p', 'chat-top-p'],
                             ['max_tokens', 'chat-max-tokens'], ['seed', 'chat-seed']]) {
    const v = number(id);
    if (v !== undefined && !Number.isNaN(v)) body[field] = v;
  }
  const tools = jsonField('chat-tools', 'Tools');
  if (tools !== undefined) body.tools = tools;
  const schema = jsonField('chat-schema', 'The response schema');
  if (schema !== undefined)
    body.response_format = { type: 'json_schema', json_schema: { name: 'page_schema', schema } };
  const extra = jsonField('chat-extra', 'Extra request fields');
  if (extra !== undefined) Object.assign(body, extra);
  return body;
}

/// Folds one streamed chunk into the reply.
function absorb(reply, chunk) {
  if (chunk.error) throw new Error(chunk.error.message ?? 'the stream ended with an error');
  if (chunk.usage) reply.usage = chunk.usage;
  const choice = chunk.choices?.[0];
  if (!choice) return false;
  const delta = choice.delta ?? {};
  let grew = false;
  if (delta.content) {
    reply.content += delta.content;
    grew = true;
  }
  for (const tc of delta.tool_calls ?? []) {
    reply.tool_calls ??= [];
    const call = (reply.tool_calls[tc.index ?? 0] ??= { id: tc.id, type: 'function',
                                                         function: { name: '', arguments: '' } });
    if (tc.function?.name) call.function.name += tc.function.name;
    if (tc.function?.arguments) call.function.arguments += tc.function.arguments;
    grew = true;
  }
  if (choice.finish_reason) reply.finish = choice.finish_reason;
  return grew;
}

async function send(text) {
  if (!current) newConversation();
  let body;
  try {
    body = requestOf([...current.messages, { role: 'user', content: text }]);
  } catch (e) {
    remember(e.message);
    $('transcript').append(entry({ role: 'assistant', content: e.message }).li);
    return;
  }
  const user = { role: 'user', content: text };
  current.messages.push(user);
  if (current.title === 'New chat') current.title = text.slice(0, 40);
  $('transcript').append(entry(user).li);
  const reply = { role: 'assistant', content: '', structured: body.response_format !== undefined };
  const view = entry(reply);
  view.li.classList.add('streaming');
  $('transcript').append(view.li);
  running = new AbortController();
  setRunning(true);
  const start = performance.now();
  let first;
  try {
    await streamEvents('/v1/chat/completions', body, (data) => {
      if (data === '[DONE]') return;
      if (absorb(reply, JSON.parse(data))) {
        first ??= performance.now();
        view.body.textContent = reply.content;
        showDetails(view, { ...reply, structured: false });
      }
    }, running.signal);
  } catch (e) {
    if (e.name === 'AbortError') {
      reply.finish = 'stopped';
    } else {
      reply.finish = `error: ${e.message}`;
      remember(`chat: ${e.message}`);
    }
  }
  const end = performance.now();
  const tokens = reply.usage?.completion_tokens;
  reply.stats = { finish: reply.finish, tokens };
  if (first !== undefined) {
    reply.stats.ttft_ms = first - start;
    if (tokens && end > first) reply.stats.tokens_per_s = (tokens - 1) / ((end - first) / 1000);
  }
  delete reply.usage;
  current.messages.push(reply);
  view.li.classList.remove('streaming');
  view.body.textContent = reply.content;
  showDetails(view, reply);
  running = null;
  setRunning(false);
  save();
  renderList();
}

function setRunning(on) {
  $('send').disabled = on;
  $('stop').disabled = !on;
}

export async function refreshModels() {
  const select = $('chat-model');
  const chosen = select.value;
  try {
    const list = await getJSON('/v1/models');
    select.replaceChildren();
    for (const m of list.data ?? []) {
      const o = el('option', m.id);
      o.value = m.id;
      select.append(o);
    }
    if (chosen) select.value = chosen;
  } catch (e) {
    remember(`models: ${e.message}`);
  }
}

export function initChat() {
  load();
  current = conversations[0] ?? null;
  if (!current) newConversation();
  renderList();
  renderTranscript();
  $('new-chat').addEventListener('click', () => { if (!running) newConversation(); });
  $('composer').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const text = $('message').value;
    if (!text.trim() || running) return;
    $('message').value = '';
    send(text);
  });
  $('message').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey) {
      ev.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('stop').addEventListener('click', () => running?.abort());
  refreshModels();
}
