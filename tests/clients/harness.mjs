// Starts the real bitnet-server on an ephemeral loopback port (the OS picks it) and waits for
// GET /health/ready, as the C++ integration tests do. The binary and the model come from the
// environment that CTest sets: BITNET_SERVER and BITNET_MODEL.
import { spawn } from 'node:child_process';
import { once } from 'node:events';

export const API_KEY = 'client-test-key';
export const MODEL = 'bitnet';

/// Starts a server; `extra` are more command-line flags; `keys: false` starts it without API
/// keys (as `make serve` does); `model` serves another GGUF than the default model. Resolves to
/// { port, origin, baseURL, log(), stop() }.
export async function startServer(extra = [], { keys = true, model = process.env.BITNET_MODEL } = {}) {
  const binary = process.env.BITNET_SERVER;
  if (!binary || !model) throw new Error('set BITNET_SERVER and BITNET_MODEL (CTest does)');
  const args = ['--model', model, '--alias', MODEL, '--port', '0', '--threads', '1',
                '--io-threads', '1', ...(keys ? ['--api-keys', API_KEY] : []), ...extra];
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  const collect = (chunk) => { text += chunk.toString(); };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  let exited = false;
  child.on('exit', () => { exited = true; });

  const deadline = Date.now() + 60_000;
  let port = 0;
  while (!port) {
    const m = /listening on 127\.0\.0\.1:(\d+)/.exec(text);
    if (m) port = Number(m[1]);
    else if (exited || Date.now() > deadline) throw new Error(`the server did not start:\n${text}`);
    else await new Promise((r) => setTimeout(r, 50));
  }
  const origin = `http://127.0.0.1:${port}`;
  for (;;) {
    try {
      const r = await fetch(`${origin}/health/ready`);
      if (r.status === 200) break;
    } catch { /* not accepting yet */ }
    if (exited || Date.now() > deadline) throw new Error(`the server never became ready:\n${text}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port,
    origin,
    baseURL: `${origin}/v1`,
    log: () => text,
    async stop() {
      if (exited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await once(child, 'exit');
      clearTimeout(timer);
    },
  };
}

/// fetch with the test key; `body` (an object) goes as JSON.
export async function call(server, method, path, body, headers = {}) {
  const init = { method, headers: { authorization: `Bearer ${API_KEY}`, ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    init.headers['content-type'] = 'application/json';
  }
  return fetch(`${server.origin}${path}`, init);
}
