// The 교문 지도 tab's behaviour: three taps to a student, the face check, a reason,
// 등록 — and nothing lost. What is not yet acknowledged waits in this device's
// queue (browser storage, per school and teacher), survives a reload, and is
// resent with the same guidance id until the server acknowledges it, while the
// teacher goes on with the next student: an answer never touches what is being
// picked. Served as /assets/gate.js.
'use strict';
(() => {
  const G = window.Guidance;
  const $ = (id) => document.getElementById(id);
  // Only gate and admin teachers have the 교문 지도 tab.
  if (!$('school-data')) return;
  const school = document.body.dataset.school;
  const teacher = document.body.dataset.teacher;
  const base = '/v1/schools/' + encodeURIComponent(school);
  const data = JSON.parse($('school-data').textContent);
  const queueKey = 'guidance.queue.' + school + '.' + teacher;
  const doneKey = 'guidance.done.' + school + '.' + teacher;
  // The school's day list as last loaded today: the duplicate check works in an app opened
  // offline. Names of students, like the class lists: gone at sign-out (`G.forgetStudents`).
  const dayKey = 'guidance.day.' + school + '.' + teacher;

  // ---- Picking: grade → class → number → the face check.

  const pick = new G.SeatPicker(data.grades);
  pick.reason = null;
  const classes = new Map();   // "grade-class" → promise of the class's students (null: not loaded)
  let shown = null;            // the student the face check shows

  function render(focus) {
    const current = pick.step;
    $('pick').hidden = current === 'check';
    $('check').hidden = current !== 'check';
    if (current === 'check') {
      renderSeatBar();
      showCheck();
      if (focus) $('student-name').focus();
      return;
    }
    const choices = pick.choices();
    $('step-title').textContent = { grade: '학년', class: '반', number: '번호' }[current];
    $('picked').textContent = [pick.grade && pick.grade + '학년', pick.classNumber && pick.classNumber + '반'].filter(Boolean).join(' ');
    // At the first step there is nothing to go back to or to show.
    $('back').parentElement.hidden = current === 'grade';
    // 처음으로 where 이전 is not already the way to the grades.
    $('restart').hidden = current !== 'number';
    renderSeatBar();
    $('grid').className = 'grid ' + current;
    $('grid').replaceChildren(...choices.map(([label, field, value]) =>
      G.el('button', { type: 'button', onclick: () => choose(field, value) }, label)));
    if (focus) $('step-title').focus();
  }

  function choose(field, value) {
    pick.choose(field, value);
    if (field === 'classNumber') students(pick.grade, value);
    if (field === 'number') {
      pick.reason = null;
      $('detail').value = '';
      for (const id of ['reason-error', 'detail-error']) G.say(id, '');
    }
    render(true);
  }

  // Grade and class stay in view once a grade is chosen: another class is
  // one choice away from its numbers, another grade one from its classes.
  function renderSeatBar() {
    $('seat-bar').hidden = pick.grade === null;
    if (pick.grade === null) return;
    const option = (value, label, selected) => G.el('option', { value: String(value), selected }, label);
    $('grade-select').replaceChildren(...data.grades.map((g) => option(g.grade, g.grade + '학년', g.grade === pick.grade)));
    $('class-select').replaceChildren(
      ...(pick.classNumber === null ? [option('', '반 고르기', true)] : []),
      ...pick.classes.map((c) => option(c.classNumber, c.classNumber + '반', c.classNumber === pick.classNumber)));
  }

  $('grade-select').addEventListener('change', (event) => {
    pick.choose('grade', Number(event.target.value));
    pick.reason = null;
    render(true);
  });
  $('class-select').addEventListener('change', (event) => {
    if (event.target.value === '') return;
    pick.choose('classNumber', Number(event.target.value));
    pick.reason = null;
    students(pick.grade, pick.classNumber);
    render(true);
  });

  $('back').addEventListener('click', () => { pick.back(); render(true); });
  $('restart').addEventListener('click', () => { pick.restart(); render(true); });
  $('check-back').addEventListener('click', () => { pick.back(); render(true); });
  // From the face check to the grades in one tap (the next student is often in another grade).
  $('check-restart').addEventListener('click', () => { pick.restart(); render(true); });

  // A class's names and photo addresses, asked once when it is tapped; its
  // photos are fetched ahead, so that the face check of any of its students
  // shows at once, and offline (the service worker keeps them).
  function students(grade, classNumber) {
    const key = grade + '-' + classNumber;
    if (!classes.has(key)) {
      classes.set(key, G.api('GET', base + '/grades/' + grade + '/classes/' + classNumber + '/students')
        .then((answer) => { learnNames(answer); return answer.students; }, () => { classes.delete(key); return null; }));
    }
    // Opened again after another class: what is left of its photos is fetched again.
    classes.get(key).then((list) => { if (list) ahead.open(key, list); });
    return classes.get(key);
  }

  // Names by seat, from every class list this page has seen: a row saved
  // offline before its class was loaded gets its name when one comes.
  const names = new Map();
  function learnNames(answer) {
    for (const s of answer.students) names.set(answer.grade + '-' + answer.classNumber + '-' + s.number, s.name);
  }

  // The school's names by seat, as the app opens and before any photo (one
  // small answer, kept by the service worker): a class never opened shows
  // its names offline. Not a view (`X-Purpose: prefetch`). On a first visit
  // the worker takes the page a moment after it opens: asked once it has (or
  // after 3 s without one), so that the worker keeps the answer.
  const controlled = !('serviceWorker' in navigator) || navigator.serviceWorker.controller ? Promise.resolve()
    : new Promise((resolve) => {
      navigator.serviceWorker.addEventListener('controllerchange', resolve, { once: true });
      setTimeout(resolve, 3000);
    });
  controlled.then(() => fetch(base + '/names', { credentials: 'same-origin', headers: { 'X-Purpose': 'prefetch' } }))
    .then((response) => (response.ok ? response.json() : null))
    .then((answer) => { if (answer) for (const [seat, name] of Object.entries(answer.names)) if (!names.has(seat)) names.set(seat, name); })
    .catch(() => {});

  // What is fetched ahead on a slow network, two at a time, none while the
  // face check's own photo is on its way (it goes first): the open class's
  // photos (a class switch drops what is left of the last one's, and stops
  // those on their way). None of it is a view (`X-Purpose: prefetch`): the
  // server records what the teacher opens.
  const ahead = {
    key: null, photos: [], running: 0, waitingFor: null, controller: new AbortController(),
    open(key, list) {
      if (key !== pick.grade + '-' + pick.classNumber || key === this.key) return;
      this.controller.abort();
      this.controller = new AbortController();
      this.key = key;
      this.photos = list.map((s) => s.photoUrl).filter((url) => url && url.startsWith('/'));
      this.next();
    },
    // The face check shows `photo`: the queue waits until it is there (or is replaced).
    wait(photo, url) {
      this.waitingFor = photo;
      this.photos = this.photos.filter((other) => other !== url);
    },
    arrived(photo) {
      if (this.waitingFor !== photo) return;
      this.waitingFor = null;
      this.next();
    },
    next() {
      while (!this.waitingFor && this.running < 2 && this.photos.length) {
        this.running += 1;
        fetch(this.photos.shift(), { credentials: 'same-origin', headers: { 'X-Purpose': 'prefetch' }, signal: this.controller.signal })
          .catch(() => {})
          .then(() => { this.running -= 1; this.next(); });
      }
    },
  };

  const seatText = (seat) => seat.grade + '학년 ' + seat.classNumber + '반 ' + seat.number + '번';

  function showCheck() {
    const seat = { grade: pick.grade, classNumber: pick.classNumber, number: pick.number };
    $('seat').textContent = seatText(seat);
    showAlready(seat);
    renderReasons();
    showStudent('loading');
    students(seat.grade, seat.classNumber).then((list) => {
      // The teacher may have moved on meanwhile: show nothing stale.
      if (pick.grade !== seat.grade || pick.classNumber !== seat.classNumber || pick.number !== seat.number) return;
      // The class list cannot be had (offline, a class never opened): its name, from the school's.
      const known = names.get(seat.grade + '-' + seat.classNumber + '-' + seat.number);
      if (!list) return showStudent(known ? { name: known, photoUrl: null, offline: true } : 'unreachable');
      showStudent(list.find((s) => s.number === seat.number) || 'unknown');
    });
  }

  // The face check: the photo large, with distinct words for still
  // loading, no photo, and a photo that did not load.
  function showStudent(student) {
    shown = typeof student === 'object' ? student : null;
    const state = $('photo-state');
    const photo = G.el('img', { id: 'photo', alt: '', hidden: true });
    const before = $('photo');
    before.replaceWith(photo);
    ahead.arrived(before);
    state.hidden = false;
    const names = { loading: '불러오는 중…', unreachable: '이름을 불러오지 못했습니다', unknown: '명부에 없는 번호입니다' };
    $('student-name').textContent = shown ? shown.name : names[student];
    showStanding(shown);
    if (!shown) {
      state.textContent = student === 'loading' ? '사진 불러오는 중' : student === 'unreachable' ? '사진을 불러오지 못했습니다' : '사진 없음';
      return;
    }
    if (!shown.photoUrl) {
      state.textContent = shown.offline ? '오프라인 · 학생증으로 확인하세요' : '사진 없음';
      return;
    }
    state.textContent = '사진 불러오는 중';
    photo.alt = shown.name + ' 사진';
    photo.addEventListener('load', () => { photo.hidden = false; state.hidden = true; ahead.arrived(photo); });
    photo.addEventListener('error', () => {
      state.textContent = navigator.onLine ? '사진을 불러오지 못했습니다' : '오프라인 · 학생증으로 확인하세요';
      ahead.arrived(photo);
    });
    photo.referrerPolicy = 'no-referrer';
    ahead.wait(photo, shown.photoUrl);
    photo.src = shown.photoUrl;
  }

  // Under the name, when the notifier answers: how often this week and an
  // open case (최근 7일 2회 · 사안 상담 예정), so a third time does not look
  // like a first. Nothing waits for it: offline or slow, the line stays empty.
  function showStanding(student) {
    $('standing').textContent = '';
    if (!student || !student.studentId) return;
    G.api('GET', '/v1/schools/' + encodeURIComponent(school) + '/students/' + encodeURIComponent(student.studentId) + '/standing')
      .then((answer) => {
        if (shown !== student) return;
        // Nothing to say of a student with no record this week and no case.
        $('standing').textContent = [answer.last7Days ? '최근 7일 ' + answer.last7Days + '회' : '', answer.case ? '사안 ' + answer.case.stateLabel : '']
          .filter(Boolean).join(' · ');
      }, () => {});
  }

  function renderReasons() {
    $('reasons').replaceChildren(...data.reasons.map((r) => G.el('button', {
      type: 'button', 'aria-pressed': String(pick.reason === r.code), onclick: () => chooseReason(r),
    }, r.label)));
    const reason = data.reasons.find((r) => r.code === pick.reason);
    $('detail-row').hidden = !(reason && reason.requiresDetail);
  }

  function chooseReason(reason) {
    pick.reason = reason.code;
    G.say('reason-error', '');
    renderReasons();
    (reason.requiresDetail ? $('detail') : $('submit')).focus();
  }

  // 등록 queues the registration and clears number and reason at once:
  // the next student is picked while this one is sent.
  $('submit').addEventListener('click', async () => {
    for (const id of ['reason-error', 'detail-error']) G.say(id, '');
    const reason = data.reasons.find((r) => r.code === pick.reason);
    if (!reason) {
      G.say('reason-error', '사유를 고르세요.');
      return;
    }
    const detail = $('detail').value.trim();
    if (reason.requiresDetail && (detail.length < 1 || detail.length > 200)) {
      G.say('detail-error', '상세 내용을 1–200자로 적으세요.');
      $('detail').focus();
      return;
    }
    const seat = { grade: pick.grade, classNumber: pick.classNumber, number: pick.number };
    const name = shown ? shown.name : '';
    // The same student for the same reason again today: asked once, one tap
    // to go on (a second tap of 등록 by mistake is the usual cause).
    const again = todayRows().filter((row) => row.state !== 'failed' && row.label === reason.label && row.seat.grade === seat.grade
      && row.seat.classNumber === seat.classNumber && row.seat.number === seat.number);
    if (again.length && !(await G.ask((name || seatText(seat)) + ' 학생은 오늘 이미 ' + G.words.ro(reason.label) + ' '
      + again.length + '회 등록되었습니다. 한 번 더 등록할까요?', '한 번 더 등록', '등록하지 않기'))) {
      G.say('register-status', '등록하지 않았습니다: ' + (name || seatText(seat)) + ' · ' + reason.label, 'ok');
      return;
    }
    const id = G.uuid();
    const at = new Date().toISOString();
    // Offline it is stored on this phone, not being sent: say so.
    const stored = navigator.onLine === false;
    enqueue({
      kind: 'register', id, at, seat, name, label: reason.label, detail: reason.requiresDetail ? detail : '', state: stored ? 'retrying' : 'sending',
      body: { guidanceId: id, occurredAt: at, student: seat, reason: reason.requiresDetail ? { code: reason.code, detail } : { code: reason.code } },
    });
    G.say('register-status', (stored ? '저장됨 · 연결되면 보냅니다: ' : '보내는 중: ') + (name || seatText(seat)) + ' · ' + reason.label, 'ok');
    pick.number = null;
    pick.reason = null;
    $('detail').value = '';
    render(true);
  });

  // ---- The queue: this device's registrations and deletions until acknowledged.

  // The probe: the ingest's readiness (it answers 200 when it can publish), past the service worker.
  const answers = () => fetch('/readyz', { cache: 'no-store' }).then((reply) => reply.ok, () => false);
  const device = new G.DeviceQueue(localStorage, queueKey, (item) => send(item), () => renderToday(), null, answers);
  const queue = () => device.items();
  const enqueue = (item) => device.add(item);
  const pump = () => device.pump();

  // What was acknowledged today, shown until the school's list has caught up.
  function done() {
    const saved = G.stored(localStorage, doneKey, null);
    return saved && saved.date === G.today() ? saved : { date: G.today(), added: [], removed: [] };
  }

  function saveDone(value) { localStorage.setItem(doneKey, JSON.stringify(value)); }

  const retried = [0, 408, 429, 502, 503, 504];

  async function send(item) {
    try {
      if (item.kind === 'register') await G.api('POST', base + '/guidances', item.body);
      else await G.api('DELETE', base + '/grades/' + item.seat.grade + '/guidances/' + encodeURIComponent(item.id));
    } catch (error) {
      if (retried.includes(error.status) || error.status === 401) {
        // The session is over: what is kept waits for its teacher without names.
        if (error.status === 401) G.forgetStudents(localStorage);
        device.change(item, { state: 'retrying', error: error.status === 401 ? '로그인이 만료되었습니다' : '' });
        offline(error.status === 0 ? 'network' : error.status === 401 ? 'signed-out' : 'server');
        return false;
      }
      device.change(item, { state: 'failed', error: G.message(error, fieldMessages) });
      return true;
    }
    const record = done();
    if (item.kind === 'register') record.added = record.added.filter((i) => i.id !== item.id).concat([Object.assign({}, item, { state: 'sent' })]);
    else record.removed = record.removed.concat([item.id]);
    saveDone(record);
    device.remove(item);
    offline(null);
    const who = item.name || seatText(item.seat);
    if (item.kind === 'register') G.say('register-status', '등록했습니다: ' + who + ' · ' + item.label, 'ok');
    else G.say('today-status', '삭제했습니다: ' + who + ' · ' + item.label, 'ok');
    loadDaySoon();
    return true;
  }

  const fieldMessages = {
    'reason.detail': '상세 내용을 1–200자로 적으세요(줄바꿈 같은 제어 문자는 쓸 수 없습니다).',
    'reason.code': '이 학교의 사유 목록에 없는 사유입니다. 페이지를 새로 고치세요.',
    'student': '명부에 없는 학생입니다.',
  };

  // Said in one line of the bar, in place of who is signed in: it moves
  // and covers nothing. The status line under 등록 says what became of each.
  function offline(cause) {
    const text = {
      network: '오프라인 · 등록과 삭제는 이 기기에 저장됩니다',
      server: '서버 응답 없음 · 이 기기에 저장하고 다시 보냅니다',
      'signed-out': '로그인 끝남 · 다시 로그인하면 남은 지도를 보냅니다',
    }[cause];
    $('offline').hidden = !text;
    $('offline').textContent = text || '';
  }

  window.addEventListener('online', () => { offline(null); pump(); loadDay(); });
  window.addEventListener('offline', () => offline('network'));
  // Another tab of this device changed the queue.
  window.addEventListener('storage', (event) => { if (event.key === queueKey || event.key === doneKey) renderToday(); });

  // ---- The school's day: every device's registrations, with this device's queue on top.

  // The school's list, or today's as last loaded (offline), or null.
  const keptDay = () => {
    const kept = G.stored(localStorage, dayKey, null);
    return kept && kept.date === G.today() && Array.isArray(kept.items) ? kept.items : null;
  };
  let day = keptDay();
  let dayTimer = null;

  async function loadDay() {
    try {
      const answer = await G.api('GET', base + '/today');
      day = answer.items;
      localStorage.setItem(dayKey, JSON.stringify({ date: G.today(), items: day }));
      G.say('today-status', '');
      const listed = new Set(day.map((i) => i.guidanceId));
      const record = done();
      record.added = record.added.filter((i) => !listed.has(i.id));
      record.removed = record.removed.filter((id) => listed.has(id));
      saveDone(record);
    } catch (error) {
      // A session that ended keeps no names; a server that does not answer leaves today's as kept.
      if (error.status === 401) G.forgetStudents(localStorage);
      day = keptDay();
      G.say('today-status', day ? '연결되지 않아 마지막으로 받은 학교 전체 목록을 보여 줍니다. 등록은 그대로 됩니다.'
        : '학교 전체 목록을 불러오지 못했습니다. 이 기기의 지도만 보입니다. 등록은 그대로 됩니다.', 'warn');
    }
    renderToday();
  }

  function loadDaySoon() {
    clearTimeout(dayTimer);
    dayTimer = setTimeout(loadDay, 1000);
  }

  const stateText = {
    sending: '보내는 중',
    retrying: '저장됨 · 연결되면 자동으로 보냅니다',
    sent: '등록됨',
  };

  // Today's registrations as this device knows them, newest first: its
  // queue, what it had acknowledged, and the school's list.
  function todayRows() {
    const record = done();
    const removed = new Set(record.removed);
    const rows = queue().filter((i) => i.kind === 'register').concat(record.added).map((i) => ({
      id: i.id, at: i.at, seat: i.seat, name: i.name || names.get(i.seat.grade + '-' + i.seat.classNumber + '-' + i.seat.number), label: i.label, detail: i.detail, by: '이 기기', mine: true, state: i.state, error: i.error,
    }));
    const local = new Set(rows.map((r) => r.id));
    for (const i of day || []) {
      if (local.has(i.guidanceId) || removed.has(i.guidanceId)) continue;
      rows.push({
        id: i.guidanceId, at: i.occurredAt, seat: { grade: i.student.grade, classNumber: i.student.classNumber, number: i.student.number },
        name: i.student.name, label: i.reason.label, detail: i.reason.detail || '', by: i.recordedByName || i.recordedBy,
        mine: i.recordedBy === teacher, state: 'listed',
      });
    }
    return rows.sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0));
  }

  // The same student already recorded today, said before 등록 (which stays allowed).
  function showAlready(seat, rows = todayRows()) {
    const same = rows.filter((row) => row.state !== 'failed' && row.seat.grade === seat.grade
      && row.seat.classNumber === seat.classNumber && row.seat.number === seat.number);
    const last = same[0];
    $('already').textContent = last
      ? '오늘 이미 등록' + (same.length > 1 ? ' ' + same.length + '회' : '') + ' · ' + G.clock(last.at) + ' · ' + last.label : '';
  }

  // 20 rows at a time; 더 보기 adds 20. A search or 내 기록만 starts again at 20.
  const pageSize = 20;
  let shownRows = pageSize;
  $('today-search').addEventListener('input', () => { shownRows = pageSize; renderToday(); });
  $('today-mine').addEventListener('change', () => { shownRows = pageSize; renderToday(); });
  $('today-more').addEventListener('click', () => {
    const first = shownRows;
    shownRows += pageSize;
    renderToday();
    // Focus on the first row added, so the list goes on where the eye was.
    const added = $('today').children[first];
    if (added) added.focus();
  });

  function renderToday() {
    const pending = queue();
    const deleting = new Map(pending.filter((i) => i.kind === 'delete').map((i) => [i.id, i]));
    const all = todayRows();
    if (pick.step === 'check') showAlready({ grade: pick.grade, classNumber: pick.classNumber, number: pick.number }, all);
    const query = $('today-search').value.trim();
    const rows = all.filter((row) => (!$('today-mine').checked || row.mine) && (!query || (row.name || '').includes(query)));
    $('today-empty').hidden = rows.length > 0;
    $('today-empty').textContent = all.length ? '찾는 기록이 없습니다.' : '아직 없습니다.';
    $('today-count').textContent = rows.length ? rows.length + '건' + (rows.length > shownRows ? ' 중 ' + shownRows + '건' : '') : '';
    $('today-more').hidden = rows.length <= shownRows;
    $('today-more').textContent = '더 보기 (' + Math.max(0, rows.length - shownRows) + '건 남음)';
    $('today').replaceChildren(...rows.slice(0, shownRows).map((row) => {
      const removal = deleting.get(row.id);
      const state = removal ? (removal.state === 'retrying' ? '삭제 저장됨 · 연결되면 자동으로 보냅니다' : '삭제하는 중')
        : row.state === 'failed' ? '보내지 못함: ' + row.error : stateText[row.state];
      const action = row.state === 'failed'
        ? G.el('button', { type: 'button', class: 'secondary', onclick: () => forget(row) }, '지우기')
        : (row.state === 'listed' || row.state === 'sent') && !removal
          ? G.el('button', { type: 'button', class: 'danger', onclick: () => remove(row) }, '삭제') : null;
      return G.el('li', { class: row.state === 'listed' || row.state === 'sent' ? '' : 'pending', tabindex: '-1' },
        G.el('div', {},
          G.el('div', {}, seatText(row.seat) + ' ' + (row.name || '(이름 미확인)')),
          G.el('div', { class: 'meta' }, G.clock(row.at) + ' · ' + row.label + (row.detail ? ' — ' + row.detail : '') + ' · ' + row.by),
          state ? G.el('div', { class: 'state' }, state) : null),
        action);
    }));
  }

  async function remove(row) {
    if (!(await G.ask(row.name + ' 학생의 지도(' + row.label + ')를 삭제할까요?', '삭제', '취소'))) return;
    enqueue({ kind: 'delete', id: row.id, at: new Date().toISOString(), seat: row.seat, name: row.name, label: row.label, state: 'sending' });
    G.say('today-status', '삭제하는 중: ' + row.name + ' · ' + row.label, 'ok');
    $('today-title').focus();
  }

  function forget(row) {
    device.save(queue().filter((i) => i.id !== row.id));
    $('today-title').focus();
  }

  render(false);
  renderToday();
  if (!navigator.onLine) offline('network');
  loadDay();
  pump();
  setInterval(loadDay, 30000);
})();
