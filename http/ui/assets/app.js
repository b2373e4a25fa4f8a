// The page's entry: the keys of this tab, the four views behind the navigation (the URL's hash
// names the one shown), and each view's own module.
import { bindKeys } from './api.js';
import { initChat, refreshModels as refreshChatModels } from './chat.js';
import { showCluster } from './cluster.js';
import { initMetrics, showMetrics } from './metrics.js';
import { initModels, showModels } from './models.js';

const VIEWS = ['chat', 'models', 'metrics', 'cluster'];

function show() {
  const name = VIEWS.includes(location.hash.slice(1)) ? location.hash.slice(1) : 'chat';
  for (const v of VIEWS) {
    document.getElementById(`view-${v}`).hidden = v !== name;
    const link = document.getElementById(`nav-${v}`);
    if (v === name) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  showMetrics(name === 'metrics');
  if (name === 'models') showModels();
  if (name === 'cluster') showCluster();
  if (name === 'chat') refreshChatModels();
}

bindKeys();
initChat();
initModels();
initMetrics();
window.addEventListener('hashchange', show);
show();
