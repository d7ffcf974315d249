// The gate app's service worker: the app opens without the network, and the
// face check of a class opened this session shows names and photos at once
// and offline.
//
// What it keeps on this device, in Cache Storage, and for how long:
// - `gate-shell`: the page and its scripts, styles and icons (no student data);
// - `gate-data`: the class lists (names) and photos of the classes opened
//   while signed in, fetched ahead when a class is opened.
// Both are emptied when the teacher signs out (the page tells this worker)
// and when any answer of the server says the session is over (401). The
// registrations not yet sent stay in the page's own queue until sent.
'use strict';

const SHELL = 'gate-shell';
const DATA = 'gate-data';
const classList = /^\/v1\/schools\/[^/]+\/grades\/\d+\/classes\/\d+\/students$/;
const photo = /^\/v1\/schools\/[^/]+\/students\/[^/]+\/photo$/;

self.addEventListener('install', (event) => event.waitUntil(self.skipWaiting()));
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

const forget = () => Promise.all([caches.delete(DATA), caches.delete(SHELL)]);

// The network's answer within `ms`, else a rejection (a server that hangs is no answer).
function within(ms, request) {
  return Promise.race([fetch(request), new Promise((_, reject) => setTimeout(() => reject(new Error('no answer within ' + ms + ' ms')), ms))]);
}

// What the server says; a 401 ends what this device keeps.
async function noted(response) {
  if (response.status === 401) await forget();
  return response;
}

// The page: from the network when it answers within 3 s, else the copy kept.
async function networkFirst(request, name) {
  try {
    const response = await noted(await within(3000, request));
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
  else if (url.pathname.startsWith('/assets/') || url.pathname === '/manifest.webmanifest') event.respondWith(keptFirst(request, SHELL));
  else if (classList.test(url.pathname) || photo.test(url.pathname)) event.respondWith(keptFirst(request, DATA));
  else if (url.pathname.startsWith('/v1/')) event.respondWith(within(10000, request).then(noted));
});

self.addEventListener('message', (event) => {
  if (event.data === 'sign-out') event.waitUntil(forget());
});
