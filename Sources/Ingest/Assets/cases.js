// 할 일: the cases this teacher holds (a school rule crossed, a case opened
// by hand), urgent and due ones first; an admin can see the whole school's.
// A case opens over the list: the student, why it was opened (the records
// it counts), its history, and the next step (a state, a date, a note) or
// a hand-over to another teacher who may read the student's record. Steps
// go to the ingest; the case is read again until it shows them. The tab's
// badge is the count of cases the teacher holds, read as the app opens (no
// student is named in it). Served as /assets/cases.js.
'use strict';
(() => {
  const G = window.Guidance;
  const $ = (id) => document.getElementById(id);
  if (!$('todo')) return;
  const schoolURL = '/v1/schools/' + encodeURIComponent(document.body.dataset.school);
  let answer = null;
  let opened = null;
  // A step not yet acknowledged keeps its id, so saving again retries it, never doubles it.
  let unsent = null;

  const scope = () => (document.querySelector('input[name=todo-scope]:checked') || { value: 'mine' }).value;
  const seat = (s) => s ? s.grade + '학년 ' + s.classNumber + '반 ' + s.number + '번' : '명부에 없는 학생';

  // The tab's badge: the cases the teacher holds, '할 일 N' to a screen reader.
  function showBadge(counts) {
    const badge = $('todo-badge');
    if (!badge) return;
    badge.hidden = counts.open === 0;
    badge.replaceChildren(G.el('span', { class: 'visually-hidden' }, '할 일 '), String(counts.open));
  }

  async function load() {
    try {
      answer = await G.api('GET', schoolURL + '/cases?scope=' + scope());
    } catch (error) {
      G.say('todo-status', '할 일을 불러오지 못했습니다. ' + G.message(error), 'warn');
      return;
    }
    G.say('todo-status', '');
    render();
  }

  function when(item) {
    if (item.state === 'new') return '확인 전';
    if (!item.nextDate) return item.stateLabel;
    const day = G.day(item.nextDate);
    if (item.nextDate < answer.today) return item.stateLabel + ' · ' + day + ' 지남';
    if (item.nextDate === answer.today) return item.stateLabel + ' · 오늘';
    return item.stateLabel + ' · ' + day;
  }

  function render() {
    if (scope() === 'mine') showBadge(answer.counts);
    $('todo-count').textContent = answer.counts.open ? answer.counts.open + '건' : '';
    $('todo-empty').hidden = answer.cases.length > 0;
    $('todo-list').replaceChildren(...answer.cases.map((item) => G.el('li', { class: 'entry' + (item.due ? ' unread' : '') },
      G.el('div', { class: 'entry-text' },
        G.el('p', { class: 'entry-head' },
          G.el('button', { type: 'button', class: 'link case-link', 'data-case': item.caseId, onclick: (event) => openCase(item.caseId, event.currentTarget) },
            G.el('strong', {}, item.student ? item.student.name : '(명부에 없음)'), ' ', seat(item.student))),
        G.el('p', { class: 'entry-reason' },
          item.urgent ? G.el('span', { class: 'tag' }, '긴급') : null,
          G.el('span', { class: 'reason' }, item.label),
          G.el('span', { class: 'often state-' + item.state }, when(item)),
          item.holderName ? G.el('span', { class: 'often' }, '담당 ' + item.holderName) : null)))));
  }

  // Why a 보호자 안내 was not sent, in the school's words; '' when it was.
  function whyUnsent(line) {
    if (!line.notice || !line.notice.startsWith('not sent')) return '';
    const why = line.notice.replace(/^not sent: /, '');
    if (why.includes('names the teacher')) return '지도한 교사의 이름이 들어 있음';
    if (why.includes('no webhook')) return '학교 알림 시스템 없음';
    if (why.includes('more than a day old')) return '하루 지난 단계';
    return why;
  }

  function historyLine(line) {
    const who = line.by ? (line.byName || line.by) : '기록 변경';
    let what;
    if (line.action === 'move') what = line.stateLabel + (line.nextDate ? ' (' + G.day(line.nextDate) + ')' : '');
    else if (line.action === 'hand-over') what = (line.toName || line.to) + ' 선생님에게 넘김';
    else if (line.action === 'note') what = '메모';
    else if (line.action === 'guardian-notice') what = whyUnsent(line) ? '보호자 안내 보내지 않음 (' + whyUnsent(line) + ')' : '보호자 안내 보냄';
    else if (line.action === 'withdraw') what = '철회 (기록이 삭제되어 기준에 못 미침)';
    else if (line.action === 'reopen') what = '다시 열림 (기준에 다시 닿음)';
    else if (line.action === 'open') what = '열림';
    else what = line.action;
    return G.el('li', { class: line.refused ? 'struck' : '' },
      G.el('div', { class: 'meta' }, G.day(G.today(line.at)) + ' ' + G.clock(line.at) + ' · ' + who),
      G.el('div', {}, what + (line.refused ? ' — 반영되지 않음' : '')),
      line.note ? G.el('p', { class: 'detail' }, line.note) : null);
  }

  async function openCase(caseId, from) {
    opened = { caseId, from };
    $('todo').hidden = true;
    $('case').hidden = false;
    $('case-title').textContent = '';
    $('case-body').replaceChildren();
    G.say('case-status', '불러오는 중…');
    $('case-title').focus();
    await loadCase();
  }

  async function loadCase() {
    let file;
    try {
      file = await G.api('GET', schoolURL + '/cases/' + encodeURIComponent(opened.caseId));
    } catch (error) {
      G.say('case-status', '불러오지 못했습니다. ' + G.message(error), 'warn');
      return null;
    }
    G.say('case-status', '');
    renderCase(file);
    return file;
  }

  function renderCase(file) {
    opened.file = file;
    const s = file.student;
    $('case-title').textContent = (s ? s.name + ' — ' : '') + file.label;
    $('case-meta').textContent = [seat(s), file.stateLabel, file.holderName ? '담당 ' + file.holderName : '규칙이 정한 선생님들',
      file.nextDate ? '다음 ' + G.day(file.nextDate) : ''].filter(Boolean).join(' · ');
    const body = [];
    if (file.records.length) {
      body.push(G.el('h3', { class: 'section' }, '열린 까닭'),
        G.el('ul', { class: 'plain' }, ...file.records.map((r) => G.el('li', { class: r.deleted ? 'struck' : '' },
          G.day(r.date) + ' ' + G.clock(r.occurredAt) + ' ' + r.reason + (r.detail ? ' — ' + r.detail : '') + (r.deleted ? ' (삭제됨)' : '')))));
    }
    if (s && G.Record && G.Record.may(s)) {
      body.push(G.el('div', { class: 'actions' },
        G.el('button', { type: 'button', class: 'secondary', onclick: (event) => G.Record.open(s, event.currentTarget) }, s.name + ' 학생 기록')));
    }
    body.push(G.el('h3', { class: 'section' }, '지난 단계'),
      file.history.length ? G.el('ol', { class: 'plain history' }, ...file.history.map(historyLine))
        : G.el('p', { class: 'meta' }, '아직 아무 단계도 없습니다.'));
    $('case-body').replaceChildren(...body);
    const open = file.state !== 'closed' && file.state !== 'withdrawn';
    $('case-step').hidden = !open;
    $('case-hand').hidden = !open;
    if ($('case-guardian')) $('case-guardian').hidden = !open || !s;
    if (!open) return;
    if ($('case-guardian') && s && !$('guardian-text').value) $('guardian-text').value = guardianTemplate(file);
    if ([...$('case-state').options].some((o) => o.value === file.state)) $('case-state').value = file.state;
    $('case-date').value = file.nextDate || '';
    // Those who may read the student's record, as the server says (the ingest accepts no one else).
    $('case-to').replaceChildren(...file.handOverTo.map((t) => G.el('option', { value: t.teacherId }, t.name)));
    $('case-hand').hidden = $('case-to').options.length === 0;
  }

  // The 보호자 안내 the page offers: the student, what happened, what the school asks; never a teacher's name.
  function guardianTemplate(file) {
    const s = file.student;
    const reasons = [...new Set(file.records.filter((r) => !r.deleted).map((r) => r.reason))];
    const what = reasons.length ? '최근 교문 지도에서 ' + G.words.ro(reasons.join(', ')) + ' ' + file.records.filter((r) => !r.deleted).length + '회 지도를 받았습니다.'
      : G.words.ro(file.label) + ' 학교에서 살피고 있습니다.';
    return s.grade + '학년 ' + s.classNumber + '반 ' + s.name + ' 학생의 보호자님께. ' + what + ' 가정에서도 함께 이야기 나누어 주시기 바랍니다.';
  }

  // Sends a step and reads the case until it shows it (the notifier stores what the ingest acknowledged within moments).
  async function send(body, saying, done) {
    const file = opened.file;
    if (!file || !file.student) return;
    unsent = unsent && unsent.caseId === file.caseId && unsent.body === JSON.stringify(body) ? unsent
      : { caseId: file.caseId, body: JSON.stringify(body), stepId: G.uuid() };
    G.say('case-status', saying);
    try {
      await G.api('POST', schoolURL + '/grades/' + file.student.grade + '/students/' + encodeURIComponent(file.student.studentId)
        + '/cases/' + encodeURIComponent(file.caseId) + '/steps', Object.assign({ stepId: unsent.stepId }, body));
    } catch (error) {
      G.say('case-status', '저장하지 못했습니다. 다시 누르면 같은 단계로 다시 보냅니다. ' + G.message(error), 'warn');
      return;
    }
    const stepId = unsent.stepId;
    unsent = null;
    // About 20 s: a busy notifier may take more than a moment.
    for (let i = 0; i < 40; i++) {
      const again = await loadCase();
      const line = again && again.history.find((l) => l.stepId === stepId);
      if (line) {
        if (line.refused) G.say('case-status', '반영되지 않았습니다: 그 사이 다른 선생님이 바꾸었습니다.', 'warn');
        else if (whyUnsent(line)) G.say('case-status', '보호자 안내를 보내지 않았습니다: ' + whyUnsent(line) + '.', 'warn');
        else G.say('case-status', done, 'ok');
        return;
      }
      await G.sleep(i < 10 ? 300 : 600);
    }
    G.say('case-status', '저장했습니다. 곧 보입니다.', 'ok');
  }

  $('case-step').addEventListener('submit', (event) => {
    event.preventDefault();
    const file = opened.file;
    const state = $('case-state').value;
    const nextDate = $('case-date').value || null;
    const note = $('case-note').value.trim() || null;
    const moved = state !== file.state || nextDate !== (file.nextDate || null);
    if (!moved && !note) {
      G.say('case-status', '상태나 날짜를 바꾸거나 메모를 적어 주세요.', 'warn');
      return;
    }
    const body = moved ? { action: 'move', state, nextDate, note } : { action: 'note', note };
    send(body, '저장하는 중…', '저장했습니다.').then(() => { if (!unsent) $('case-note').value = ''; });
  });

  if ($('case-guardian')) {
    $('case-guardian').addEventListener('submit', (event) => {
      event.preventDefault();
      const note = $('guardian-text').value.trim();
      if (!note) {
        G.say('case-status', '보호자에게 보낼 글을 적어 주세요.', 'warn');
        return;
      }
      send({ action: 'guardian-notice', note }, '보호자 안내를 보내는 중…', '보호자 안내를 학교 알림 시스템으로 보냈습니다.');
    });
  }

  $('case-hand').addEventListener('submit', (event) => {
    event.preventDefault();
    const to = $('case-to').value;
    const name = $('case-to').selectedOptions[0] ? $('case-to').selectedOptions[0].textContent : to;
    send({ action: 'hand-over', to, note: $('case-note').value.trim() || null }, '넘기는 중…', name + ' 선생님에게 넘겼습니다.');
  });

  function closeCase() {
    $('case').hidden = true;
    $('todo').hidden = false;
    const from = opened && opened.from;
    opened = null;
    load().then(() => {
      const again = from && $('todo-list').querySelector('[data-case="' + CSS.escape(from.dataset.case) + '"]');
      (again || $('todo-title')).focus();
    });
  }

  $('case-close').addEventListener('click', closeCase);
  for (const input of document.querySelectorAll('input[name=todo-scope]')) input.addEventListener('change', load);
  // The badge from the moment the app opens: counts alone.
  G.api('GET', schoolURL + '/cases?only=counts').then((counts) => { if (!answer) showBadge(counts.counts); }, () => {});
  G.whenShown('panel-todo', () => { if ($('case').hidden) load(); });
})();
