// What both pages' scripts share: calls to this server's API (the session
// cookie goes along), problem+json turned into Korean sentences, and elements
// built from text, never from HTML strings. Served as /assets/common.js.
'use strict';
window.Guidance = (() => {
  class ApiError extends Error {
    constructor(status, problem, retryAfter) {
      super((problem && problem.detail) || ('HTTP ' + status));
      this.status = status;
      this.problem = problem || {};
      this.retryAfter = retryAfter;
    }
    get fields() { return (this.problem.errors || []).map((e) => e.field); }
  }

  // One call to the API; resolves with the JSON answer (null for 204),
  // rejects with an ApiError (status 0 when the server was not reached).
  // A file's bytes (an ArrayBuffer or Blob) go as they are, anything else as JSON.
  async function api(method, url, body) {
    const init = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
    if (body instanceof ArrayBuffer || (typeof Blob !== 'undefined' && body instanceof Blob)) {
      init.headers['Content-Type'] = 'application/octet-stream';
      init.body = body;
    } else if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(url, init);
    } catch (e) {
      throw new ApiError(0, { detail: String(e) }, 2);
    }
    const text = await response.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
    if (!response.ok) throw new ApiError(response.status, data, Number(response.headers.get('Retry-After')) || 0);
    return data;
  }

  const statusText = {
    0: '서버에 연결할 수 없습니다. 네트워크를 확인하세요.',
    400: '요청 내용이 올바르지 않습니다.',
    401: '로그인이 만료되었습니다. 페이지를 새로 고쳐 다시 로그인하세요.',
    403: '이 작업을 할 권한이 없습니다.',
    404: '찾을 수 없습니다.',
    409: '이미 처리되었거나 지금은 할 수 없는 요청입니다.',
    413: '내용이 너무 깁니다.',
    422: '입력한 내용을 확인하세요.',
    429: '요청이 너무 많습니다. 잠시 뒤 다시 시도하세요.',
    503: '서버가 잠시 응답할 수 없습니다(503). 잠시 뒤 다시 시도하세요.',
  };

  // The Korean sentence for an error: the page's own for the field the
  // problem names, else the one for its status.
  function message(error, fieldMessages) {
    for (const field of error.fields || []) {
      if (fieldMessages && fieldMessages[field]) return fieldMessages[field];
    }
    return statusText[error.status] || ('요청을 처리하지 못했습니다(' + error.status + ').');
  }

  // An element with attributes and children; strings become text nodes.
  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === false || value == null) continue;
      if (name === 'class') node.className = value;
      else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? '' : String(value));
    }
    for (const child of children) {
      if (child != null) node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  // Text into the element with `id`; kind 'ok' / 'warn' / '' colours it.
  function say(id, text, kind) {
    const node = document.getElementById(id);
    node.textContent = text || '';
    node.className = node.className.split(' ').filter((c) => c !== 'ok' && c !== 'warn').concat(kind ? [kind] : []).join(' ');
  }

  // A random UUID (v4); crypto.randomUUID needs https, a school's
  // network often has plain http.
  function uuid() {
    const b = crypto.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
    return h.slice(0, 8) + '-' + h.slice(8, 12) + '-' + h.slice(12, 16) + '-' + h.slice(16, 20) + '-' + h.slice(20);
  }

  // Times and dates as the school's clock shows them (data-time-zone).
  const timeZone = document.body.dataset.timeZone || undefined;

  // "오전 8:18", as the e-mails write it.
  function clock(iso) {
    const date = new Date(iso);
    return isNaN(date) ? '' : date.toLocaleTimeString('ko-KR', { hour: 'numeric', minute: '2-digit', timeZone });
  }

  // "2026-12-01" -> "12월 1일(화)", as the e-mails write it.
  function day(text) {
    const parts = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text || '');
    if (!parts) return text || '';
    const date = new Date(Date.UTC(+parts[1], +parts[2] - 1, +parts[3]));
    return (+parts[2]) + '월 ' + (+parts[3]) + '일(' + '일월화수목금토'[date.getUTCDay()] + ')';
  }

  // The school's date today (or of the instant `at`), YYYY-MM-DD.
  function today(at) {
    return (at ? new Date(at) : new Date()).toLocaleDateString('en-CA', { timeZone });
  }

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  // The words the pages, the e-mails and the webhooks' text share (README "Words").
  const words = {
    // How often a student was stopped: two counts that cannot contradict each other.
    often: (f) => (f ? '최근 7일 ' + f.last7Days + '회 · 최근 30일 ' + f.last30Days + '회' : ''),
    // Revision 2 is the 1차 정정; the first has no name.
    amendment: (revision) => (revision > 1 ? (revision - 1) + '차 정정' : ''),
    // A student's service: what is left, or all done.
    serviceLeft: (outstanding) => (outstanding > 0 ? '남은 봉사 ' + outstanding + '회' : '봉사 완료'),
    // With sessions closed (종결): '봉사 3회 중 1회 완료, 1회 종결', as the weekly 봉사 명단 says it.
    serviceDone: (owed, served, closed) => '봉사 ' + owed + '회 중 ' + served + '회 완료' + (closed > 0 ? ', ' + closed + '회 종결' : ''),
    // The newest guidance of a student, in the 봉사 명단.
    lastGuidance: (occurredAt, label) => '최근 지도 ' + day(today(occurredAt)) + ' ' + label,
    // '복장 불량으로', '실내화 없음으로', '기타로': the particle the word's last
    // sound takes (로 after a vowel or ㄹ), not '(으)로'.
    ro: (word) => {
      const last = String(word).trim().slice(-1);
      const code = last.charCodeAt(0) - 0xac00;
      if (code < 0 || code > 11171) return word + '(으)로';
      const final = code % 28;
      return word + (final === 0 || final === 8 ? '로' : '으로');
    },
  };

  // The app's own question, in place of the browser's confirm() (which looks
  // like an error, cannot be styled and names the site): a modal dialog with
  // the question and two buttons, focus on the safe one. Resolves true for `yes`.
  function ask(question, yes, no) {
    let dialog = document.getElementById('ask');
    if (!dialog) {
      dialog = el('dialog', { id: 'ask', class: 'ask', 'aria-labelledby': 'ask-text' },
        el('p', { id: 'ask-text' }),
        el('div', { class: 'actions' }, el('button', { type: 'button', id: 'ask-yes' }), el('button', { type: 'button', id: 'ask-no', class: 'secondary' })));
      document.body.append(dialog);
    }
    const back = document.activeElement;
    document.getElementById('ask-text').textContent = question;
    document.getElementById('ask-yes').textContent = yes;
    document.getElementById('ask-no').textContent = no;
    return new Promise((resolve) => {
      const done = (answer) => {
        dialog.onclose = null;
        if (dialog.open) dialog.close();
        if (back && back.isConnected) back.focus();
        resolve(answer);
      };
      document.getElementById('ask-yes').onclick = () => done(true);
      document.getElementById('ask-no').onclick = () => done(false);
      // Esc closes it: the safe answer.
      dialog.onclose = () => done(false);
      dialog.showModal();
      document.getElementById('ask-no').focus();
    });
  }

  // What `storage` keeps as JSON under `key`, or `fallback` (nothing there, or not JSON).
  function stored(storage, key, fallback) {
    try {
      const value = JSON.parse(storage.getItem(key));
      return value === null ? fallback : value;
    } catch (e) {
      return fallback;
    }
  }

  // This device's changes until the server acknowledges each, kept in
  // `storage` (localStorage) under `key`, so that they survive a reload.
  // `pump` sends them in order through `send(item)`, which resolves true
  // when it is done with the item (acknowledged, or refused for good and
  // marked 'failed', which `pump` then skips) and false to stop and retry
  // the same item, unchanged (the same id), after a wait of 2 s doubling to
  // 30 s (one retry waits at a time). Meanwhile `probe()` (does the server
  // answer? a small read that changes nothing) is asked every 2 s, and a
  // yes sends at once: the queue leaves within ~2 s of the server coming
  // back, whatever the browser's online event says. `changed` is called
  // after every change; `timers` is { set: setTimeout, clear: clearTimeout }.
  class DeviceQueue {
    constructor(storage, key, send, changed, timers, probe) {
      this.storage = storage;
      this.key = key;
      this.send = send;
      this.changed = changed || (() => {});
      this.timers = timers || { set: (run, ms) => setTimeout(run, ms), clear: (id) => clearTimeout(id) };
      this.probe = probe || null;
      this.timer = null;
      this.probing = null;
      this.pumping = false;
      this.wait = 2;
    }

    items() {
      const value = stored(this.storage, this.key, []);
      return Array.isArray(value) ? value : [];
    }

    save(items) {
      this.storage.setItem(this.key, JSON.stringify(items));
      this.changed();
    }

    add(item) {
      this.save(this.items().concat([item]));
      return this.pump();
    }

    // Another state or error for the item of the same id and kind.
    change(item, fields) {
      this.save(this.items().map((i) => (i.id === item.id && i.kind === item.kind ? Object.assign(i, fields) : i)));
    }

    remove(item) {
      this.save(this.items().filter((i) => !(i.id === item.id && i.kind === item.kind)));
    }

    async pump() {
      if (this.pumping) return;
      this.pumping = true;
      if (this.timer !== null) this.timers.clear(this.timer);
      this.timer = null;
      try {
        for (;;) {
          const item = this.items().find((i) => i.state !== 'failed');
          if (!item) break;
          if (!(await this.send(item))) {
            this.timer = this.timers.set(() => this.pump(), this.wait * 1000);
            this.wait = Math.min(this.wait * 2, 30);
            this.probeSoon();
            break;
          }
          this.wait = 2;
        }
      } finally {
        this.pumping = false;
      }
    }

    // One probe waits at a time, and only while something waits to be sent.
    probeSoon() {
      if (!this.probe || this.probing !== null) return;
      this.probing = this.timers.set(async () => {
        this.probing = null;
        if (this.pumping || !this.items().some((i) => i.state !== 'failed')) return;
        if (await this.probe()) {
          this.wait = 2;
          await this.pump();
        } else {
          this.probeSoon();
        }
      }, 2000);
    }
  }

  // The gate's seat tree: grade → class → number over the school's seats
  // (`grades`: [{grade, classes: [{classNumber, numbers}]}]), then the face
  // check. A grade chosen anew starts its class and number again; a class, its number.
  class SeatPicker {
    constructor(grades) {
      this.grades = grades;
      this.grade = null;
      this.classNumber = null;
      this.number = null;
    }

    get step() {
      if (this.grade === null) return 'grade';
      if (this.classNumber === null) return 'class';
      return this.number === null ? 'number' : 'check';
    }

    // The classes of the chosen grade (the seat bar's choices).
    get classes() {
      const grade = this.grades.find((g) => g.grade === this.grade);
      return grade ? grade.classes : [];
    }

    // The step's buttons as [label, field, value].
    choices() {
      switch (this.step) {
        case 'grade': return this.grades.map((g) => [g.grade + '학년', 'grade', g.grade]);
        case 'class': return this.classes.map((c) => [c.classNumber + '반', 'classNumber', c.classNumber]);
        case 'number': {
          const entry = this.classes.find((c) => c.classNumber === this.classNumber);
          return (entry ? entry.numbers : []).map((n) => [String(n), 'number', n]);
        }
        default: return [];
      }
    }

    choose(field, value) {
      this[field] = value;
      if (field === 'grade') this.classNumber = null;
      if (field !== 'number') this.number = null;
    }

    // One step back: from the face check to the numbers, then the classes, then the grades.
    back() {
      if (this.number !== null) this.number = null;
      else if (this.classNumber !== null) this.classNumber = null;
      else this.grade = null;
    }

    // 처음으로: back to the grades in one tap.
    restart() {
      this.grade = null;
      this.classNumber = null;
      this.number = null;
    }
  }

  // Calls `load` each time the tab panel `id` is shown (app.js); nothing when the page has no such panel.
  // A file the server writes as CSV (`url` asked with Accept: text/csv), saved as `name`.
  async function download(url, name) {
    const response = await fetch(url, { credentials: 'same-origin', headers: { Accept: 'text/csv' } });
    if (!response.ok) throw new ApiError(response.status, null, 0);
    saveFile(await response.blob(), name);
  }

  // A file the page made (or fetched), saved by the browser as `name`.
  function saveFile(blob, name) {
    const file = URL.createObjectURL(blob);
    const link = el('a', { href: file, download: name });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(file), 10000);
  }

  function whenShown(id, load) {
    const panel = document.getElementById(id);
    if (panel) panel.addEventListener('shown', load);
  }

  // When a session ends (signed out, revoked, expired, another teacher):
  // no student's name stays in `storage`. The lists of what was
  // acknowledged go; registrations not yet acknowledged stay (nothing is
  // lost) without the names they showed, to be sent when their teacher
  // signs in again.
  function forgetStudents(storage) {
    const keys = [];
    for (let index = 0; index < storage.length; index++) keys.push(storage.key(index));
    for (const key of keys) {
      if (key.startsWith('guidance.done.') || key.startsWith('guidance.day.')) storage.removeItem(key);
      else if (key.startsWith('guidance.queue.')) {
        const items = stored(storage, key, []);
        storage.setItem(key, JSON.stringify(Array.isArray(items) ? items.map(({ name, ...kept }) => kept) : []));
      }
    }
  }

  return { api, ApiError, message, el, say, ask, uuid, clock, day, today, sleep, words, stored, forgetStudents, DeviceQueue, SeatPicker, whenShown, download, saveFile };
})();
