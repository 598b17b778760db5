// The console's entry: sign-in, the header, and the hash routes to the pages.
//   #/                          overview
//   #/streams/NAME              a stream: shards, lineage, rates, record browser
//   #/channels/ARN              a channel: lag, errors, DLQ, redrive
//   #/tables/WAREHOUSE/NS/NAME  a table: schema history, snapshots, files, rows
//   #/registry[/REGISTRY/SCHEMA]  the schema registry
import * as api from './lib/api.js';
import { h, add, clear, errorBox, fmtTime } from './lib/dom.js';
import overview from './pages/overview.js';
import streamPage from './pages/stream.js';
import channelPage from './pages/channel.js';
import tablePage from './pages/table.js';
import { registryPage, schemaPage } from './pages/registry.js';

const main = document.getElementById('main');
const ctx = { info: null, session: null, timers: [], generation: 0 };

// Runs `fn` now and every `ms` while the current page is shown.
ctx.every = (ms, fn) => {
  const gen = ctx.generation;
  const tick = async () => {
    if (gen !== ctx.generation) return;
    try { await fn(); } catch (e) { console.warn('refresh failed:', e.message); }
  };
  ctx.timers.push(setInterval(tick, ms));
  return tick();
};
ctx.current = () => ctx.generation;

const routes = [
  [/^\/?$/, () => overview],
  [/^\/streams\/([^/]+)$/, () => streamPage],
  [/^\/channels\/(.+)$/, () => channelPage],
  [/^\/tables\/([^/]+)\/([^/]+)\/([^/]+)$/, () => tablePage],
  [/^\/registry$/, () => registryPage],
  [/^\/registry\/([^/]+)\/([^/]+)$/, () => schemaPage],
];

async function route() {
  for (const t of ctx.timers) clearInterval(t);
  ctx.timers = [];
  const gen = ++ctx.generation;
  const [rawPath, rawQuery = ''] = location.hash.replace(/^#/, '').split('?');
  const path = rawPath || '/';
  ctx.query = Object.fromEntries(new URLSearchParams(rawQuery));
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('active', (a.dataset.nav === 'registry') === path.startsWith('/registry'));
  }
  for (const [re, page] of routes) {
    const m = re.exec(path);
    if (!m) continue;
    const params = m.slice(1).map((x) => decodeURIComponent(x));  // segments are encoded once
    const target = h('div', { id: 'page' });
    clear(main).append(target);
    try {
      await page()(target, params, ctx);
    } catch (e) {
      if (gen === ctx.generation) target.append(errorBox(e));
    }
    document.body.dataset.page = path.split('/')[1] || 'overview';
    document.body.dataset.loaded = String(gen);
    return;
  }
  clear(main).append(h('h1', 'No such page'), h('p', h('a', { href: '#/' }, 'Back to the overview')));
  document.body.dataset.loaded = String(gen);
}

function header() {
  const who = clear(document.getElementById('who'));
  const notice = document.getElementById('notice');
  const s = ctx.session;
  document.getElementById('nav').hidden = false;
  if (!s.login_required) {
    notice.hidden = false;
    clear(notice).append('This server has no [[credentials]] or bearer tokens configured: the console, like the API, ' +
      'is open to anyone who can reach it. Configure credentials to require a sign-in (docs/console.md).');
    who.append(h('span', { class: 'badge warn', id: 'auth-mode' }, 'open'));
  } else {
    notice.hidden = true;
    who.append(h('span', { id: 'auth-mode' }, `signed in (${s.principal}), until ${fmtTime(s.expires_at)}`),
      h('button', { id: 'logout', onclick: async () => {
        try { await api.post('/console/api/logout', {}); } catch { /* signed out anyway */ }
        location.reload();
      } }, 'Sign out'));
  }
  const i = ctx.info;
  document.getElementById('foot').textContent =
    `icestream ${i.version} · region ${i.region} · account ${i.account}`;
}

function login(session, problem) {
  document.getElementById('nav').hidden = true;
  document.body.dataset.page = 'login';
  const methods = session.methods || [];
  let mode = methods.includes('access_key') ? 'access_key' : 'bearer_token';
  const err = h('div');
  if (problem) err.append(errorBox(problem));
  const fields = h('div');
  const form = h('form', { id: 'login-form' });
  const draw = () => {
    clear(fields);
    if (mode === 'bearer_token') {
      fields.append(h('label', 'Bearer token ([auth] bearer_tokens)',
        h('input', { name: 'bearer_token', type: 'password', autocomplete: 'current-password', required: true })));
    } else {
      fields.append(
        h('label', 'Access key id ([[credentials]])', h('input', { name: 'access_key_id', autocomplete: 'username', required: true })),
        h('label', 'Secret access key', h('input', { name: 'secret_access_key', type: 'password', autocomplete: 'current-password', required: true })));
    }
  };
  const seg = h('div', { class: 'seg' }, methods.map((m) => h('button', {
    type: 'button', class: m === mode ? 'on' : null, 'data-method': m,
    onclick: (ev) => { mode = m; for (const b of seg.children) b.classList.toggle('on', b === ev.target); draw(); },
  }, m === 'bearer_token' ? 'Bearer token' : 'Access key pair')));
  draw();
  add(form, methods.length > 1 ? seg : null, fields, h('button', { class: 'primary', type: 'submit' }, 'Sign in'), err);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const data = Object.fromEntries(new FormData(form).entries());
    try {
      const s = await api.post('/console/api/login', data);
      start(s);
    } catch (e) {
      clear(err).append(errorBox(e));
    }
  });
  clear(main).append(h('section', { class: 'card login' }, h('h1', 'Sign in to icestream'),
    h('p', { class: 'muted' }, 'This server has credentials configured. Sign in with one of them; the console ' +
      'keeps a session cookie (HttpOnly, SameSite=Strict) until it expires or you sign out.'), form));
  document.body.dataset.loaded = 'login';
}

async function start(session) {
  ctx.session = session;
  api.setCsrf(session.csrf_token);
  ctx.info = await api.get('/console/api/info');
  header();
  window.addEventListener('hashchange', route);
  await route();
}

api.whenSignedOut(() => {
  for (const t of ctx.timers) clearInterval(t);
  ctx.timers = [];
  ctx.generation++;
  window.removeEventListener('hashchange', route);
  api.get('/console/api/session').then((s) => login(s, 'Your session ended; sign in again.'));
});

(async () => {
  try {
    const s = await api.get('/console/api/session');
    if (s.login_required && !s.authenticated) login(s);
    else await start(s);
  } catch (e) {
    clear(main).append(errorBox(e));
  }
})();
