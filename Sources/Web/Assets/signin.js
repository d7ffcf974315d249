// The sign-in page: whatever ended the session before it (a sign-out, a
// revocation, an expiry, another teacher), this device keeps no student's
// name or photo: the acknowledged lists and the names in the queue go
// (`forgetStudents`), and so do the class lists and photos the app's
// service worker kept (`gate-data`). 로그아웃's answer also carries
// `Clear-Site-Data: "cache"`, for the browser's own cache.
// Served as /assets/signin.js.
'use strict';
(() => {
  const G = window.Guidance;
  try {
    G.forgetStudents(localStorage);
  } catch (e) {
    // Storage turned off: nothing was kept.
  }
  if (window.caches) caches.delete('gate-data').catch(() => {});
  const worker = navigator.serviceWorker && navigator.serviceWorker.controller;
  if (worker) worker.postMessage('session-ended');
})();
