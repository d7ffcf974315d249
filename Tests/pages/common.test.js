// Unit tests of the pages' shared script (Sources/Web/Assets/common.js),
// run by Node's own test runner from scripts/test: `node --test Tests/pages`.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');

const source = fs.readFileSync(path.join(__dirname, '../../Sources/Web/Assets/common.js'), 'utf8');

// common.js as a page loads it: `window.Guidance`, the school's time zone on <body>.
function load({ fetch } = {}) {
  const window = {};
  const context = vm.createContext({
    window, document: { body: { dataset: { timeZone: 'Asia/Seoul' } } }, crypto: globalThis.crypto,
    fetch: fetch || (() => Promise.reject(new TypeError('no network in this test'))), setTimeout, clearTimeout, Date, Intl,
  });
  vm.runInContext(source, context);
  return window.Guidance;
}

// Values made inside the page's realm, as plain data of this one.
const plain = (value) => JSON.parse(JSON.stringify(value));

// localStorage as a browser keeps it: strings by key.
class Storage {
  constructor() { this.map = new Map(); }
  getItem(key) { return this.map.has(key) ? this.map.get(key) : null; }
  setItem(key, value) { this.map.set(key, String(value)); }
  removeItem(key) { this.map.delete(key); }
  key(index) { return [...this.map.keys()][index] ?? null; }
  get length() { return this.map.size; }
}

test('a session that ended leaves no name in storage, and every unsent registration', () => {
  const G = load();
  const storage = new Storage();
  const waiting = { kind: 'register', id: 'g1', seat: { grade: 1, classNumber: 3, number: 12 }, name: '김하늘', label: '복장 불량', detail: '', state: 'retrying',
                    body: { guidanceId: 'g1', student: { grade: 1, classNumber: 3, number: 12 }, reason: { code: 'wrongClothes' } } };
  storage.setItem('guidance.queue.demo-hs.t-gate-01', JSON.stringify([waiting]));
  storage.setItem('guidance.done.demo-hs.t-gate-01', JSON.stringify({ date: '2026-12-03', added: [{ id: 'g0', name: '박진재', detail: '교문 앞' }], removed: [] }));
  storage.setItem('guidance.day.demo-hs.t-gate-01', JSON.stringify({ date: '2026-12-03', items: [{ guidanceId: 'g2', student: { name: '이도윤' } }] }));
  storage.setItem('other', 'kept');
  G.forgetStudents(storage);
  assert.equal(storage.getItem('guidance.done.demo-hs.t-gate-01'), null, 'the acknowledged list goes');
  assert.equal(storage.getItem('guidance.day.demo-hs.t-gate-01'), null, 'the school\'s day list kept for offline goes');
  const queue = JSON.parse(storage.getItem('guidance.queue.demo-hs.t-gate-01'));
  assert.equal(queue.length, 1, 'the unsent registration stays');
  assert.deepEqual(queue[0].body, waiting.body, 'and is sent as it was');
  assert.equal(queue[0].name, undefined);
  assert.ok(![...storage.map.values()].some((value) => value.includes('김하늘') || value.includes('박진재') || value.includes('이도윤')), 'no name anywhere');
  assert.equal(storage.getItem('other'), 'kept');
});

test('days and times read as the school clock and the e-mails write them', () => {
  const G = load();
  assert.equal(G.day('2026-12-01'), '12월 1일(화)');
  assert.equal(G.day('2027-01-03'), '1월 3일(일)');
  assert.equal(G.day('not a day'), 'not a day');
  // A Node built without full ICU data says AM where a browser says 오전.
  assert.match(G.clock('2026-12-01T23:18:00Z'), /^(오전|AM) 8:18$/, 'Seoul is UTC+9');
  assert.equal(G.clock('nonsense'), '');
  assert.equal(G.today('2026-12-01T15:30:00Z'), '2026-12-02', 'past midnight in Seoul is the next school day');
  assert.equal(G.today('2026-12-01T14:59:00Z'), '2026-12-01');
});

test('the words for how often, amendments and service are the ones README "Words" lists', () => {
  const G = load();
  assert.equal(G.words.often({ last7Days: 2, last30Days: 5 }), '최근 7일 2회 · 최근 30일 5회');
  assert.equal(G.words.often(undefined), '', 'a digest written before counts existed says nothing');
  assert.equal(G.words.amendment(1), '', 'the first list has no name');
  assert.equal(G.words.amendment(2), '1차 정정');
  assert.equal(G.words.amendment(4), '3차 정정');
  assert.equal(G.words.serviceLeft(2), '남은 봉사 2회');
  assert.equal(G.words.serviceLeft(0), '봉사 완료');
  assert.equal(G.words.serviceDone(3, 1), '봉사 3회 중 1회 완료');
  assert.equal(G.words.serviceDone(3, 1, 0), '봉사 3회 중 1회 완료');
  assert.equal(G.words.serviceDone(3, 1, 2), '봉사 3회 중 1회 완료, 2회 종결');
  assert.equal(G.words.lastGuidance('2026-12-03T23:30:00Z', '복장 불량'), '최근 지도 12월 4일(금) 복장 불량', "the school's day (Seoul), not UTC's");
});

test('으로 or 로 as the word ends, never "(으)로" for a Korean word', () => {
  const { words } = load();
  assert.equal(words.ro('복장 불량'), '복장 불량으로');
  assert.equal(words.ro('실내화 없음'), '실내화 없음으로');
  assert.equal(words.ro('무단횡단'), '무단횡단으로');
  assert.equal(words.ro('기타'), '기타로', 'after a vowel');
  assert.equal(words.ro('교실'), '교실로', 'after ㄹ');
  assert.equal(words.ro('PE'), 'PE(으)로', 'not Korean: both');
});

test('the seat tree: grade, class, number, then the face check; a new grade or class starts below it again', () => {
  const G = load();
  const grades = [
    { grade: 1, classes: [{ classNumber: 1, numbers: [1, 2, 3] }, { classNumber: 2, numbers: [1, 2] }] },
    { grade: 2, classes: [{ classNumber: 1, numbers: [1, 4] }] },
  ];
  const pick = new G.SeatPicker(grades);
  assert.equal(pick.step, 'grade');
  assert.deepEqual(plain(pick.choices()), [['1학년', 'grade', 1], ['2학년', 'grade', 2]]);
  pick.choose('grade', 1);
  assert.equal(pick.step, 'class');
  assert.deepEqual(plain(pick.choices()), [['1반', 'classNumber', 1], ['2반', 'classNumber', 2]]);
  pick.choose('classNumber', 2);
  assert.deepEqual(plain(pick.choices()), [['1', 'number', 1], ['2', 'number', 2]]);
  pick.choose('number', 2);
  assert.equal(pick.step, 'check');
  assert.deepEqual(plain(pick.choices()), []);
  // From the face check, the seat bar's class: that class's numbers in one choice.
  pick.choose('classNumber', 1);
  assert.equal(pick.step, 'number');
  assert.equal(pick.number, null);
  assert.deepEqual(plain(pick.choices()).map((c) => c[2]), [1, 2, 3]);
  // Another grade: its classes, nothing of the class chosen before.
  pick.choose('number', 3);
  pick.choose('grade', 2);
  assert.equal(pick.step, 'class');
  assert.deepEqual(plain(pick.classes).map((c) => c.classNumber), [1]);
  // 이전 goes back one step at a time.
  pick.choose('classNumber', 1);
  pick.choose('number', 4);
  pick.back();
  assert.equal(pick.step, 'number');
  pick.back();
  assert.equal(pick.step, 'class');
  pick.back();
  assert.equal(pick.step, 'grade');
  pick.back();
  assert.equal(pick.step, 'grade', 'nothing before the grades');
  // 처음으로: from the face check back to the grades in one tap.
  pick.choose('grade', 1);
  pick.choose('classNumber', 2);
  pick.choose('number', 1);
  pick.restart();
  assert.equal(pick.step, 'grade');
  assert.deepEqual([pick.grade, pick.classNumber, pick.number], [null, null, null]);
});

test("an error reads as the page's sentence for its field, else its status's", () => {
  const G = load();
  const unknownStudent = new G.ApiError(422, { detail: 'no student', errors: [{ field: 'student', message: 'x' }] });
  assert.equal(G.message(unknownStudent, { student: '명부에 없는 학생입니다.' }), '명부에 없는 학생입니다.');
  assert.equal(G.message(unknownStudent, {}), '입력한 내용을 확인하세요.');
  assert.equal(G.message(new G.ApiError(0, {})), '서버에 연결할 수 없습니다. 네트워크를 확인하세요.');
  assert.equal(G.message(new G.ApiError(418, {})), '요청을 처리하지 못했습니다(418).');
});

test('ids are random version-4 UUIDs', () => {
  const G = load();
  const ids = new Set(Array.from({ length: 200 }, () => G.uuid()));
  assert.equal(ids.size, 200);
  for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});

test('the API: JSON answers, problem+json as ApiError, no network as status 0', async () => {
  const answers = [
    { ok: true, status: 202, text: '{"guidanceId":"g1"}', headers: {} },
    { ok: false, status: 503, text: '{"detail":"broker down"}', headers: { 'Retry-After': '2' } },
  ];
  const G = load({
    fetch: async () => {
      const answer = answers.shift();
      if (!answer) throw new TypeError('Failed to fetch');
      return { ok: answer.ok, status: answer.status, text: async () => answer.text, headers: { get: (name) => answer.headers[name] || null } };
    },
  });
  assert.deepEqual(plain(await G.api('POST', '/v1/x', { a: 1 })), { guidanceId: 'g1' });
  await assert.rejects(G.api('GET', '/v1/x'), (error) => error.status === 503 && error.retryAfter === 2 && error.message === 'broker down');
  await assert.rejects(G.api('GET', '/v1/x'), (error) => error.status === 0);
});

// The device queue: what the gate page keeps until the server acknowledges it.
function queueWith(storage, outcomes) {
  const G = load();
  const sent = [];
  const timers = [];
  const queue = new G.DeviceQueue(storage, 'guidance.queue.sa.t1', async (item) => {
    sent.push(JSON.parse(JSON.stringify(item)));
    const outcome = outcomes.length ? outcomes.shift() : 'ok';
    if (outcome === 'ok') queue.remove(item);
    if (outcome === 'refused') queue.change(item, { state: 'failed', error: 'refused' });
    if (outcome === 'offline') queue.change(item, { state: 'retrying' });
    return outcome !== 'offline';
  }, null, { set: (run, ms) => { timers.push({ run, ms }); return timers.length; }, clear: () => {} });
  return { queue, sent, timers };
}

const registration = (id) => ({ kind: 'register', id, state: 'sending', body: { guidanceId: id, student: { grade: 1, classNumber: 3, number: 12 } } });

test('what storage keeps reads back as JSON, else the fallback', () => {
  const G = load();
  const storage = new Storage();
  assert.equal(G.stored(storage, 'k', 'none'), 'none', 'nothing there');
  storage.setItem('k', '{not json');
  assert.equal(G.stored(storage, 'k', 'none'), 'none', 'not JSON');
  storage.setItem('k', JSON.stringify({ date: '2026-12-02', added: [1] }));
  assert.deepEqual(plain(G.stored(storage, 'k', null)), { date: '2026-12-02', added: [1] });
});

test('the queue sends in order and forgets what was acknowledged', async () => {
  const storage = new Storage();
  const { queue, sent } = queueWith(storage, ['ok', 'ok', 'ok']);
  storage.setItem('guidance.queue.sa.t1', JSON.stringify([registration('a'), registration('b')]));
  await queue.add(registration('c'));
  assert.deepEqual(sent.map((item) => item.id), ['a', 'b', 'c']);
  assert.deepEqual(plain(queue.items()), []);
});

test('offline, the same item is resent with the same id, waiting 2 s doubling to 30 s', async () => {
  const storage = new Storage();
  const { queue, sent, timers } = queueWith(storage, ['offline', 'offline', 'offline', 'offline', 'offline', 'ok', 'ok']);
  await queue.add(registration('a'));
  await queue.add(registration('b'));
  assert.deepEqual(sent.map((item) => item.id), ['a', 'a'], 'b waits behind a');
  for (let round = 0; round < 3; round++) await timers[timers.length - 1].run();
  assert.deepEqual(timers.map((timer) => timer.ms), [2000, 4000, 8000, 16000, 30000]);
  await timers[timers.length - 1].run();
  assert.deepEqual(sent.map((item) => item.id), ['a', 'a', 'a', 'a', 'a', 'a', 'b']);
  assert.ok(sent.every((item) => item.body.guidanceId === item.id), 'the body keeps its guidanceId');
  assert.deepEqual(plain(queue.items()), []);
});

test('when the server answers a probe, the queue is sent at once, not after its back-off', async () => {
  const G = load();
  const storage = new Storage();
  const sent = [];
  const timers = [];
  const answers = [false, false, true];
  let up = false;
  const queue = new G.DeviceQueue(storage, 'guidance.queue.sa.t1', async (item) => {
    sent.push(item.id);
    if (!up) return false;
    queue.remove(item);
    return true;
  }, null, { set: (run, ms) => { timers.push({ run, ms }); return timers.length; }, clear: () => {} }, async () => {
    up = answers.shift();
    return up;
  });
  await queue.add(registration('a'));
  // The back-off's retry (2 s) and one probe (2 s) wait.
  assert.deepEqual(timers.map((timer) => timer.ms), [2000, 2000]);
  await queue.add(registration('b'));
  assert.deepEqual(timers.map((timer) => timer.ms), [2000, 2000, 4000], 'the retry doubled; still one probe');
  // A probe every 2 s; the third finds the server and sends both at once, before the 4 s retry.
  await timers[1].run();
  await timers[3].run();
  assert.deepEqual(timers.map((timer) => timer.ms), [2000, 2000, 4000, 2000, 2000]);
  await timers[4].run();
  assert.deepEqual(sent, ['a', 'a', 'a', 'b']);
  assert.deepEqual(plain(queue.items()), []);
  assert.equal(timers.length, 5, 'nothing waits, nothing probes');
});

test('what waits survives a reload: a new page on the same storage sends it', async () => {
  const storage = new Storage();
  const before = queueWith(storage, ['offline']);
  await before.queue.add(registration('a'));
  assert.equal(before.queue.items().length, 1);
  const after = queueWith(storage, ['ok']);
  assert.deepEqual(plain(after.queue.items().map((item) => [item.id, item.state])), [['a', 'retrying']]);
  await after.queue.pump();
  assert.deepEqual(after.sent.map((item) => item.body.guidanceId), ['a']);
  assert.deepEqual(plain(after.queue.items()), []);
});

test('a refused item stays, marked failed, and does not hold the others back', async () => {
  const storage = new Storage();
  const { queue, sent } = queueWith(storage, ['refused', 'ok']);
  storage.setItem('guidance.queue.sa.t1', JSON.stringify([registration('a')]));
  await queue.add(registration('b'));
  assert.deepEqual(sent.map((item) => item.id), ['a', 'b']);
  assert.deepEqual(plain(queue.items().map((item) => [item.id, item.state])), [['a', 'failed']]);
  storage.setItem('guidance.queue.sa.t1', '{not json');
  assert.deepEqual(plain(queue.items()), [], 'a broken entry reads as empty, not as an error');
});
