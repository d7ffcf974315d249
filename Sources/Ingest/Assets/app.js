// The app's tabs: 교문 지도, 명단, 봉사, 알림함, 관리, 설정 — those the server
// rendered for this teacher. One panel shows at a time; the address's
// fragment (#gate, #lists, …) names it, so a reload or a link opens the same
// tab, and a digest's link (/digests/{id}) opens the 알림함. Each time a panel
// is shown it gets a `shown` event, which the other scripts load on (a tab
// never opened reads nothing, and nothing of it is in the access record).
// Served as /assets/app.js.
'use strict';
(() => {
  // ---- The installed app: a service worker opens it offline (sw.js says what it keeps).
  // A registration that fails (a connection dropped on a weak network) is tried
  // again, 2 s and then 8 s later: without the worker the app does not open offline.
  const register = (retries) => navigator.serviceWorker.register('/sw.js').catch(() => {
    if (retries > 0) setTimeout(() => register(retries - 1), retries === 2 ? 2000 : 8000);
  });
  if ('serviceWorker' in navigator) {
    register(2);
    // Loaded while the worker was activating, the page is not yet its: it asks.
    navigator.serviceWorker.ready.then((registration) => {
      if (!navigator.serviceWorker.controller && registration.active) registration.active.postMessage('claim');
    });
  }
  // Signing out takes the names and photos this device kept with it.
  const signOutForm = document.querySelector('form[action="/session/end"]');
  if (signOutForm) {
    signOutForm.addEventListener('submit', (event) => {
      event.preventDefault();
      const worker = navigator.serviceWorker && navigator.serviceWorker.controller;
      if (worker) worker.postMessage('sign-out');
      window.Guidance.forgetStudents(localStorage);
      const emptied = window.caches ? Promise.all([caches.delete('gate-data'), caches.delete('gate-shell')]) : Promise.resolve();
      // This device's push ends with the session (the server drops it too).
      const unsubscribed = navigator.serviceWorker && window.PushManager
        ? navigator.serviceWorker.getRegistration().then((r) => r && r.pushManager.getSubscription()).then((s) => s && s.unsubscribe())
        : Promise.resolve();
      Promise.all([emptied, unsubscribed]).then(() => signOutForm.submit(), () => signOutForm.submit());
    });
  }

  // ---- Tabs.
  const tabs = [...document.querySelectorAll('[role=tab]')];
  if (!tabs.length) return;
  const name = (tab) => tab.id.slice('tab-'.length);
  const panel = (tab) => document.getElementById(tab.getAttribute('aria-controls'));

  function show(wanted, focus) {
    const chosen = tabs.find((tab) => name(tab) === wanted) || tabs[0];
    for (const tab of tabs) {
      const selected = tab === chosen;
      tab.setAttribute('aria-selected', String(selected));
      tab.tabIndex = selected ? 0 : -1;
      panel(tab).hidden = !selected;
    }
    if (focus) chosen.focus();
    panel(chosen).dispatchEvent(new CustomEvent('shown'));
  }

  for (const [index, tab] of tabs.entries()) {
    tab.addEventListener('click', (event) => {
      event.preventDefault();
      history.replaceState(null, '', '#' + name(tab));
      show(name(tab), false);
    });
    // Arrow keys move between tabs (the ARIA tabs pattern); the tab shown follows.
    tab.addEventListener('keydown', (event) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
      if (!step) return;
      event.preventDefault();
      const next = tabs[(index + step + tabs.length) % tabs.length];
      history.replaceState(null, '', '#' + name(next));
      show(name(next), true);
    });
  }
  window.addEventListener('hashchange', () => show(location.hash.slice(1), false));

  // Scripts the page loads after it is usable (`data-later`): where the gate
  // is the first tab, a slow phone network brings the gate's own script
  // first, and the other tabs' after it.
  function loadLater(names) {
    return names.reduce((previous, file) => previous.then(() => new Promise((resolve) => {
      const script = document.createElement('script');
      script.src = '/assets/' + file;
      script.onload = resolve;
      script.onerror = resolve;
      document.head.append(script);
    })), Promise.resolve());
  }

  // Once every deferred script of the page has run (in order), so each heard of its panel.
  document.addEventListener('DOMContentLoaded', () => {
    show(location.hash.slice(1) || (document.body.dataset.open ? 'inbox' : ''), false);
  });
  // After the page's load, so that they hold up neither the gate nor the load.
  window.addEventListener('load', () => {
    const later = (document.body.dataset.later || '').split(' ').filter(Boolean);
    if (!later.length) return;
    loadLater(later).then(() => {
      // A panel other than the gate shown before its script came: now it hears it.
      const open = tabs.find((tab) => tab.getAttribute('aria-selected') === 'true');
      if (open && name(open) !== 'gate') panel(open).dispatchEvent(new CustomEvent('shown'));
    });
  });
})();
