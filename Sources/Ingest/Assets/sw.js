// The gate app's service worker: the app opens without the network, and the
// face check of a class opened this session shows names and photos at once
// and offline.
//
// What it keeps on this device, in Cache Storage, and for how long:
// - `gate-shell`: the page and its scripts, styles and icons (no student data);
// - `gate-data`: the class lists (names) and photos of the classes opened
//   while signed in, fetched ahead when a class is opened.
// Both are emptied when the teacher signs out (the page tells this worker).
// `gate-data` belongs to the teacher the app page was served to (its
// `X-Signed-In` header, kept in `gate-shell`): it is emptied whenever a page
// comes for anyone else or for nobody (the sign-in page), and when an answer
// says the session is over or the data is not this teacher's (401, 403), so
// the next teacher on this browser is never served the last one's class.
// The registrations not yet sent stay in the page's own queue until sent.
'use strict';

const SHELL = 'gate-shell';
const DATA = 'gate-data';
const OWNER = '/signed-in-teacher';
const classList = /^\/v1\/schools\/[^/]+\/grades\/\d+\/classes\/\d+\/students$/;
// The school's names by seat, asked for as the gate opens: a class never opened has its names offline.
const schoolNames = /^\/v1\/schools\/[^/]+\/names$/;
const photo = /^\/v1\/schools\/[^/]+\/students\/[^/]+\/photo$/;

// The app shell, kept when the worker installs, so that the first visit's
// reload opens without the network too: the page as served to this teacher,
// and what it loads.
const SHELL_FILES = ['/assets/common.js', '/assets/app.js', '/assets/gate.js', '/assets/teacher.js', '/assets/style.css',
  '/assets/icon.svg', '/assets/icon-192.png', '/manifest.webmanifest'];

async function keepShell() {
  const shell = await caches.open(SHELL);
  await Promise.all(SHELL_FILES.map(async (file) => {
    const response = await fetch(file);
    if (response.ok) await shell.put(file, response);
  }));
  const page = await noted(await fetch('/', { credentials: 'same-origin' })).then(noteTeacher);
  if (page.ok) await shell.put('/', page);
}

self.addEventListener('install', (event) => event.waitUntil(keepShell().catch(() => {}).then(() => self.skipWaiting())));
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

const forget = () => Promise.all([caches.delete(DATA), caches.delete(SHELL)]);

// A page of the app came from the server for `teacher` ('' for nobody): the
// data kept for anyone else goes.
async function servedTo(teacher) {
  const shell = await caches.open(SHELL);
  const kept = await shell.match(OWNER);
  const before = kept ? await kept.text() : null;
  if (teacher === '' || teacher !== before) await caches.delete(DATA);
  await shell.put(OWNER, new Response(teacher));
}

// A page the server served says who is signed in. Only a page: a 503 while
// the service restarts says nothing about the session, and must not take the
// offline gate's class lists with it.
async function noteTeacher(response) {
  if (response.ok && response.type === 'basic') await servedTo(response.headers.get('X-Signed-In') || '');
  return response;
}

// The network's answer within `ms`, else a rejection (a server that hangs is no answer).
function within(ms, request) {
  return Promise.race([fetch(request), new Promise((_, reject) => setTimeout(() => reject(new Error('no answer within ' + ms + ' ms')), ms))]);
}

// What the server says; a 401 ends what this device keeps, a 403 the data
// kept (it was someone else's, or is no longer this teacher's to see).
async function noted(response) {
  if (response.status === 401) await forget();
  else if (response.status === 403) await caches.delete(DATA);
  return response;
}

// The page: from the network when it answers within 3 s, else the copy kept.
async function networkFirst(request, name) {
  try {
    const response = await noted(await within(3000, request)).then(noteTeacher);
    if (response.ok) await (await caches.open(name)).put(request, response.clone());
    return response;
  } catch (error) {
    const kept = await (await caches.open(name)).match(request);
    if (kept) return kept;
    throw error;
  }
}

// Assets, class lists and photos: the copy kept at once (refreshed behind it), else the network.
async function keptFirst(request, name) {
  const cache = await caches.open(name);
  const kept = await cache.match(request);
  const fresh = within(10000, request).then(noted).then(async (response) => {
    if (response.ok) await cache.put(request, response.clone());
    return response;
  });
  if (kept) {
    fresh.catch(() => {});
    return kept;
  }
  return fresh;
}

self.addEventListener('fetch', (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== 'GET' || url.origin !== self.location.origin) return;
  if (request.mode === 'navigate' && url.pathname === '/') event.respondWith(networkFirst(request, SHELL));
  else if (request.mode === 'navigate') event.respondWith(fetch(request).then(noteTeacher));
  else if (url.pathname.startsWith('/assets/') || url.pathname === '/manifest.webmanifest') event.respondWith(keptFirst(request, SHELL));
  else if (classList.test(url.pathname) || schoolNames.test(url.pathname) || photo.test(url.pathname)) event.respondWith(keptFirst(request, DATA));
  else if (url.pathname.startsWith('/v1/')) event.respondWith(within(10000, request).then(noted));
});

self.addEventListener('message', (event) => {
  if (event.data === 'sign-out') event.waitUntil(forget());
  if (event.data === 'session-ended') event.waitUntil(servedTo(''));
  // A page that loaded while this worker was activating (its claim ran
  // before the page was a client) asks to be taken over: otherwise it
  // stays uncontrolled, and does not open offline, until its next load.
  if (event.data === 'claim') event.waitUntil(self.clients.claim());
});

// ---- Web Push: a list, an amendment or a rule's notice, as the notifier
// sent it (PushChannel). It names no student (a lock screen is public):
// the list's title, a count, and where the app opens it. A browser that
// pushes must show something, so a message it cannot read still says
// where to look.
function appPath(url) {
  try {
    const parsed = new URL(url || '/', self.location.origin);
    return parsed.origin === self.location.origin ? parsed.pathname + parsed.search + parsed.hash : '/';
  } catch (error) {
    return '/';
  }
}

function notice(data) {
  let message = {};
  try {
    message = (data && data.json()) || {};
  } catch (error) {
    message = {};
  }
  return {
    title: typeof message.title === 'string' && message.title ? message.title : '교문 지도 알림',
    options: {
      body: typeof message.body === 'string' ? message.body : '앱에서 보세요.',
      // The digest's id: a retry's copy replaces the first, silently.
      tag: typeof message.tag === 'string' && message.tag ? message.tag : 'guidance',
      data: { url: appPath(message.url) }, icon: '/assets/icon-192.png', badge: '/assets/icon-192.png', lang: 'ko',
    },
  };
}

self.addEventListener('push', (event) => {
  const { title, options } = notice(event.data);
  event.waitUntil(self.registration.showNotification(title, options));
});

// A tap opens the item in the app: in a window of the app already open
// (focused, then sent there), else a new one.
async function openApp(url) {
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  const open = windows.find((client) => new URL(client.url).origin === self.location.origin);
  if (!open) return self.clients.openWindow(url);
  const focused = await open.focus();
  return (focused || open).navigate(url);
}

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  event.waitUntil(openApp(appPath(event.notification.data && event.notification.data.url)));
});

