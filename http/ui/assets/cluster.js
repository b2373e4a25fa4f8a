// The Cluster view: this node and its peers (GET /v1/cluster), each node's models and load, and
// the rolling operations across them.
import { el, getJSON } from './api.js';

function table(headers, rows) {
  const t = el('table');
  const head = el('tr');
  for (const h of headers) head.append(el('th', h));
  t.append(head);
  for (const r of rows) {
    const tr = el('tr');
    for (const c of r) tr.append(el('td', c));
    t.append(tr);
  }
  return t;
}

export async function showCluster() {
  const box = document.getElementById('cluster-info');
  try {
    const c = await getJSON('/v1/cluster', 'operator');
    const parts = [el('p', c.clustered ? `This node: ${c.self}`
                                       : `A single node (${c.self}), not in a cluster.`)];
    parts.push(table(['node', 'address', 'state', 'roles', 'models', 'running', 'waiting'],
                     (c.nodes ?? []).map((n) => [
                       n.self ? `${n.name} (this node)` : n.name, n.address, n.state,
                       n.roles ?? '', (n.models ?? []).map((m) => `${m.alias} ${m.version} ${m.state}`)
                         .join(', '), n.running, n.waiting])));
    if ((c.operations ?? []).length) {
      parts.push(el('h3', 'Rolling operations'));
      parts.push(table(['id', 'kind', 'alias', 'version', 'state', 'done'],
                       c.operations.map((o) => [o.id, o.kind, o.alias, o.version, o.state,
                                                `${o.done.length} of ${o.nodes.length}`])));
    }
    box.replaceChildren(...parts);
  } catch (e) {
    box.replaceChildren(el('p', `The cluster could not be read: ${e.message}`, 'error'));
  }
}
