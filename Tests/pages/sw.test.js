// Unit tests of the service worker's Web Push handlers (Sources/Ingest/Assets/sw.js):
// `push` shows what the notifier sent, `notificationclick` opens it in the app.
// Run by Node's own test runner from scripts/test: `node --test Tests/pages`.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');

const source = fs.readFileSync(path.join(__dirname, '../../Sources/Ingest/Assets/sw.js'), 'utf8');
const origin = 'https://app.school.example';

// The worker as a browser runs it: its handlers, what it showed, the windows it opened or moved.
function load({ windows = [] } = {}) {
  const handlers = {};
  const shown = [];
  const opened = [];
  const self = {
    location: new URL(origin + '/sw.js'),
    addEventListener: (type, handler) => { handlers[type] = handler; },
    registration: { showNotification: async (title, options) => { shown.push({ title, options }); } },
    clients: {
      matchAll: async (query) => { assert.deepEqual({ ...query }, { type: 'window', includeUncontrolled: true }); return windows; },
      openWindow: async (url) => { opened.push(url); return { url }; },
      claim: async () => {},
    },
    skipWaiting: () => {},
  };
  vm.runInContext(source, vm.createContext({ self, caches: {}, fetch: () => Promise.reject(new Error('no network')), URL, Response, setTimeout }));
  // An event whose `waitUntil` promise the test awaits, as the browser keeps the worker alive for it.
  async function dispatch(type, fields) {
    let until = Promise.resolve();
    handlers[type]({ ...fields, waitUntil: (promise) => { until = promise; } });
    await until;
  }
  return { dispatch, shown, opened };
}

const pushed = (message) => ({ data: { json: () => message } });

test('a list pushed shows its title and count, tagged by the digest, opening its page', async () => {
  const worker = load();
  await worker.dispatch('push', pushed({
    title: '[서울고] 11월 21일 1학년 1반 교문 지도 명단', body: '지도 2건 · 앱에서 보기', entries: 2, messages: 1,
    url: '/digests/sa.2026-11-21.t-hr-1-1.class.r1', tag: 'sa.2026-11-21.t-hr-1-1.class.r1',
  }));
  assert.equal(worker.shown.length, 1);
  const { title, options } = worker.shown[0];
  assert.equal(title, '[서울고] 11월 21일 1학년 1반 교문 지도 명단');
  assert.equal(options.body, '지도 2건 · 앱에서 보기');
  assert.equal(options.tag, 'sa.2026-11-21.t-hr-1-1.class.r1', 'a retry replaces, not repeats');
  assert.equal(options.data.url, '/digests/sa.2026-11-21.t-hr-1-1.class.r1');
});

test('a message it cannot read still shows a notice that sends to the app', async () => {
  for (const data of [null, { json: () => { throw new SyntaxError('not JSON'); } }, pushed({ title: 7, url: 'javascript:alert(1)' })]) {
    const worker = load();
    await worker.dispatch('push', { data });
    assert.equal(worker.shown.length, 1, 'a push always shows something');
    assert.equal(worker.shown[0].title, '교문 지도 알림');
    assert.equal(worker.shown[0].options.data.url, '/');
  }
});

test('a link to another site in a message opens the app instead', async () => {
  const worker = load();
  await worker.dispatch('push', pushed({ title: 't', url: 'https://elsewhere.example/phish' }));
  assert.equal(worker.shown[0].options.data.url, '/');
});

test('a tap opens the item in a new window when the app is not open', async () => {
  const worker = load({ windows: [{ url: 'https://elsewhere.example/' }] });
  let closed = false;
  await worker.dispatch('notificationclick', { notification: { data: { url: '/digests/d1' }, close: () => { closed = true; } } });
  assert.ok(closed, 'the notification goes');
  assert.deepEqual(worker.opened, ['/digests/d1']);
});

test('a tap brings an open window of the app forward and takes it to the item', async () => {
  const moved = [];
  const app = { url: origin + '/#gate', focus: async () => app, navigate: async (url) => { moved.push(url); return app; } };
  const worker = load({ windows: [app] });
  await worker.dispatch('notificationclick', { notification: { data: { url: '/digests/d2' }, close: () => {} } });
  assert.deepEqual(moved, ['/digests/d2']);
  assert.deepEqual(worker.opened, [], 'no second window');
});
