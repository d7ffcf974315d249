// The app's tabs other than the gate: 명단 of today (or a day the teacher
// picks, where their role lets them read it) by the chosen filter with a
// search by name and 50 rows at a time, the 봉사 명단, the 알림함 and a list
// opened from it (marked read), 설정, and the admin's run button, failed
// deliveries and access record; each read when its tab is opened. Entries are rows
// that fit a phone: photo, name and seat, reason, time and how often, the
// detail beneath. Every action leaves focus somewhere sensible. Served as
// /assets/teacher.js.
'use strict';
(() => {
  const G = window.Guidance;
  const $ = (id) => document.getElementById(id);
  const data = document.body.dataset;
  const inboxURL = '/v1/teachers/' + encodeURIComponent(data.teacher) + '/inbox';
  const schoolURL = '/v1/schools/' + encodeURIComponent(data.school);
  const PAGE = 50;
  let digests = [];
  let openedId = null;
  let today = { date: '', items: [] };
  // The school's today, as the server last said it.
  let schoolToday = '';
  let shown = PAGE;

  // The words the e-mails say too (common.js).
  const { often, amendment: amendmentName, serviceLeft, serviceDone, lastGuidance } = G.words;
  // " · 불참 1회 · 기한 지나 완료 1회": what a student's 교내봉사 counts add, when there is any.
  const serviceMarks = (counts) => (counts && counts.missed ? ' · 불참 ' + counts.missed + '회' : '')
    + (counts && counts.late ? ' · 기한 지나 완료 ' + counts.late + '회' : '');
  const seatName = (s) => s.grade + '학년 ' + s.classNumber + '반';

  function photo(url, name) {
    if (!url) return G.el('span', { class: 'thumb', 'aria-hidden': 'true' }, name.slice(0, 1));
    const img = G.el('img', { class: 'thumb', src: url, alt: '', loading: 'lazy', decoding: 'async' });
    img.addEventListener('error', () => img.replaceWith(G.el('span', { class: 'thumb', 'aria-hidden': 'true' }, name.slice(0, 1))));
    return img;
  }

  // One entry as a row: photo, name and number, time; reason, how often and the service left; the detail beneath.
  // The name opens the student's record (학생 기록) where the teacher may read it.
  // In the weekly 봉사 명단 an entry is a student: the service left, and the day and reason of their newest guidance.
  // `remove`: a 삭제 button calls it (today's 명단, for whoever may delete at the gate).
  // `dated`: the time with its day (a rule's notice counts records of several days).
  function row(entry, weekly, remove, dated) {
    const s = entry.student;
    const removed = entry.change === 'removed';
    const left = entry.service ? '남은 봉사 ' + entry.service.outstanding + '회' : null;
    return G.el('li', { class: 'entry' + (removed ? ' removed' : ''), tabindex: '-1' },
      photo(entry.photoUrl, s.name),
      G.el('div', { class: 'entry-text' },
        G.el('p', { class: 'entry-head' },
          G.el('span', { class: 'who' }, mayOpenRecord(s)
            ? G.el('button', { type: 'button', class: 'link record-link', 'aria-label': s.name + ' 학생 기록',
              onclick: (event) => openRecord(s, event.currentTarget) }, G.el('strong', {}, s.name))
            : G.el('strong', {}, s.name), ' ', G.el('span', { class: 'entry-seat' }, s.number + '번')),
          G.el('span', { class: 'time' }, weekly ? left : (dated ? G.day(G.today(entry.occurredAt)) + ' ' : '') + G.clock(entry.occurredAt))),
        G.el('p', { class: 'entry-reason' },
          removed ? G.el('span', { class: 'tag' }, weekly ? '빠짐' : '삭제된 기록') : null,
          !weekly && entry.case ? G.el('span', { class: 'tag case-tag', title: entry.case.label }, entry.case.stateLabel) : null,
          weekly ? G.el('span', { class: 'often' }, lastGuidance(entry.occurredAt, entry.reason.label))
            : G.el('span', { class: 'reason' }, entry.reason.label),
          !weekly && entry.frequency ? G.el('span', { class: 'often' }, often(entry.frequency)) : null,
          !weekly && left ? G.el('span', { class: 'often' }, left) : null),
        entry.reason.detail ? G.el('p', { class: 'detail' }, entry.reason.detail) : null),
      remove && !removed ? G.el('button', { type: 'button', class: 'danger', onclick: () => remove(entry) }, '삭제') : null);
  }

  // Entries grouped by class (grade, class order), newest first in each, with counts.
  function grouped(entries, limit, weekly, remove, dated) {
    const groups = new Map();
    for (const entry of entries) {
      const name = seatName(entry.student);
      if (!groups.has(name)) groups.set(name, { key: entry.student.grade * 1000 + entry.student.classNumber, entries: [] });
      groups.get(name).entries.push(entry);
    }
    const nodes = [];
    let left = limit;
    for (const [name, group] of [...groups].sort((a, b) => a[1].key - b[1].key)) {
      if (left <= 0) break;
      group.entries.sort((a, b) => (a.occurredAt < b.occurredAt ? 1 : a.occurredAt > b.occurredAt ? -1 : 0));
      const visible = group.entries.slice(0, left);
      left -= visible.length;
      nodes.push(G.el('h3', { class: 'group' }, name + ' ', G.el('span', { class: 'meta' }, group.entries.length + (weekly ? '명' : '건'))));
      nodes.push(G.el('ul', { class: 'entries' }, ...visible.map((entry) => row(entry, weekly, remove, dated))));
    }
    return nodes;
  }

  // --- 알림함 ---

  async function loadInbox() {
    try {
      digests = (await G.api('GET', inboxURL)).items;
    } catch (error) {
      G.say('inbox-status', '알림함을 불러오지 못했습니다. ' + G.message(error), 'warn');
      return;
    }
    G.say('inbox-status', '');
    renderInbox();
  }

  // The 알림함 tab's badge: the number on screen (the tab bar fits a phone),
  // '읽지 않음 N' to a screen reader.
  function showUnread(unread) {
    $('unread-count').hidden = unread === 0;
    $('unread-count').replaceChildren(G.el('span', { class: 'visually-hidden' }, '읽지 않음 '), String(unread));
  }

  // A list's title in the app: the e-mail's subject without the school's name (the app is the school's already).
  const inboxTitle = (digest) => digest.subject.replace(/^\[[^\]]*\]\s*/, '');

  // What the meta line says of a digest's kind: a rule's notice, or an amendment's number.
  const kindName = (digest) => (digest.scope === 'rule' ? '학교 규칙 알림' : amendmentName(digest.revision));

  function renderInbox() {
    showUnread(digests.filter((d) => !d.read).length);
    // The lists of the day 날짜 says, or all of them.
    const day = $('inbox-day').value;
    const listed = day ? digests.filter((d) => d.date === day) : digests;
    $('inbox-empty').hidden = listed.length > 0;
    $('inbox-empty').textContent = day ? G.day(day) + '의 명단이 없습니다.' : $('inbox-empty').dataset.none;
    $('inbox').replaceChildren(...listed.map((digest) => G.el('li', { class: digest.read ? '' : 'unread' },
      G.el('div', {},
        G.el('button', { type: 'button', class: 'link', 'data-digest': digest.digestId, onclick: () => open(digest.digestId) }, inboxTitle(digest)),
        G.el('div', { class: 'meta' }, [G.day(digest.date), kindName(digest), digest.read ? '읽음' : '읽지 않음']
          .filter(Boolean).join(' · '))))));
  }

  async function open(digestId) {
    const digest = digests.find((d) => d.digestId === digestId);
    if (!digest) {
      G.say('inbox-status', '이 명단을 찾을 수 없습니다. 다른 교사에게 간 명단이거나 주소가 잘못되었습니다.', 'warn');
      $('inbox-title').focus();
      return;
    }
    openedId = digestId;
    const amendment = digest.revision > 1;
    const added = digest.entries.filter((e) => e.change !== 'removed');
    const removed = digest.entries.filter((e) => e.change === 'removed');
    const weekly = digest.scope === 'service';
    const body = [];
    if (digest.scope === 'overdue') {
      // Sessions of 교내봉사 past their due date: the list's own lines (each student by seat and name).
      body.push(...digest.text.split('\n').filter((line) => line.trim()).map((line) => G.el('p', {}, line)));
    } else if (digest.scope === 'rule') {
      // A rule's notice: its sentences (the student by seat), then the records it counted, with names.
      body.push(...digest.text.split('\n\n')[0].split('\n').map((line) => G.el('p', {}, line)));
      if (added.length) body.push(G.el('h3', { class: 'section' }, '해당 기록 ' + added.length + '건'));
      body.push(...grouped(added, Infinity, false, null, true));
    } else {
      if (digest.entries.length === 0) body.push(G.el('p', {}, '지도 기록이 없습니다.'));
      if (amendment && added.length) {
        body.push(G.el('h3', { class: 'section' }, weekly ? '새로 봉사가 남은 학생 ' + added.length + '명' : '추가된 기록 ' + added.length + '건'));
      }
      body.push(...grouped(added, Infinity, weekly));
      if (removed.length) {
        body.push(G.el('h3', { class: 'section' }, weekly ? '명단에서 빠진 학생 ' + removed.length + '명 (봉사를 마쳤거나 지도가 삭제됨)'
          : '삭제된 기록 ' + removed.length + '건 (교문에서 지운 기록)'));
      }
      body.push(...grouped(removed, Infinity, weekly));
    }
    $('digest-subject').textContent = inboxTitle(digest);
    $('digest-meta').textContent = [G.day(digest.date), kindName(digest)].filter(Boolean).join(' · ');
    $('digest-body').replaceChildren(...body);
    $('digest').hidden = false;
    $('digest-subject').focus();
    history.replaceState(null, '', '/digests/' + encodeURIComponent(digest.digestId));
    if (!digest.read) {
      try {
        await G.api('POST', inboxURL + '/' + encodeURIComponent(digest.digestId) + '/read');
        digest.read = true;
        renderInbox();
      } catch (error) {
        G.say('inbox-status', '읽음으로 표시하지 못했습니다. ' + G.message(error), 'warn');
      }
    }
  }

  function closeDigest() {
    $('digest').hidden = true;
    history.replaceState(null, '', '/');
    const back = openedId && document.querySelector('#inbox button[data-digest="' + CSS.escape(openedId) + '"]');
    (back || $('inbox-title')).focus();
  }

  // --- 학생 기록 ---

  // Whether the teacher reads the student's record: where they read other
  // days' lists of the student's class (the filters marked data-other-days).
  function mayOpenRecord(s) {
    if (!$('record') || !s.studentId || s.studentId === '(erased)') return false;
    return [...document.querySelectorAll('input[name=filter][data-other-days]')].some((input) => {
      const q = new URLSearchParams(input.value);
      return !q.get('grade') || (Number(q.get('grade')) === s.grade
        && (!q.get('classNumber') || Number(q.get('classNumber')) === s.classNumber));
    });
  }

  // The record shows in place of the tab it was opened from, which comes back on 닫기.
  const record = { of: null, from: null, panel: null };

  async function openRecord(student, from) {
    Object.assign(record, { of: student.studentId, from, panel: document.querySelector('[role=tabpanel]:not([hidden])') });
    if (record.panel) record.panel.hidden = true;
    $('record').hidden = false;
    $('record-title').textContent = student.name + ' 학생 기록';
    $('record-meta').textContent = seatName(student) + ' ' + student.number + '번';
    $('record-body').replaceChildren();
    G.say('record-status', '불러오는 중…');
    $('record-title').focus();
    let answer;
    try {
      answer = await G.api('GET', schoolURL + '/students/' + encodeURIComponent(student.studentId) + '/history');
    } catch (error) {
      G.say('record-status', '기록을 불러오지 못했습니다. ' + G.message(error), 'warn');
      return;
    }
    if (record.of !== student.studentId) return;
    G.say('record-status', '');
    renderRecord(answer);
  }

  // '*/3/7' -> '최근 7일 동안 지도 3회' (a reason's label as the record names it).
  function ruleText(rule, labels) {
    const [reason, count, days] = rule.split('/');
    return '최근 ' + days + '일 동안 ' + (reason === '*' ? '지도' : labels[reason] || reason) + ' ' + count + '회';
  }

  // A table that scrolls sideways on a phone (a region a keyboard can scroll), named for a screen reader.
  function recordTable(caption, head, rows) {
    return G.el('div', { class: 'scroll', tabindex: '0', role: 'region', 'aria-label': caption },
      G.el('table', {},
        G.el('caption', { class: 'visually-hidden' }, caption),
        G.el('thead', {}, G.el('tr', {}, ...head.map((h) => G.el('th', { scope: 'col' }, h)))),
        G.el('tbody', {}, ...rows.map((row) => G.el('tr', { class: row.struck ? 'struck' : '' }, ...row.cells.map((c) => G.el('td', {}, c)))))));
  }

  function renderRecord(answer) {
    const s = answer.student;
    const name = (id) => answer.teachers[id] || id;
    const active = answer.guidances.filter((g) => !g.deletedAt);
    const labels = Object.fromEntries(answer.guidances.map((g) => [g.reason.code, g.reason.label]));
    // The school year begins in March: December 2026 and February 2027 are both 2026학년도.
    const printed = G.today(answer.exportedAt);
    const year = Number(printed.slice(0, 4)) - (Number(printed.slice(5, 7)) < 3 ? 1 : 0);
    $('record-meta').textContent = [answer.schoolName + ' ' + year + '학년도', s ? seatName(s) + ' ' + s.number + '번' : '명부에 없는 학생',
      '담임 ' + (answer.homeroomTeacher || '없음'), '출력 ' + G.day(printed) + ' ' + G.clock(answer.exportedAt)].join(' · ');
    const service = answer.service;
    const body = [G.el('p', {}, '지도 ' + active.length + '건'
      + (answer.guidances.length > active.length ? ' (삭제된 기록 ' + (answer.guidances.length - active.length) + '건 별도)' : '')
      + ' · ' + serviceDone(service.owed, service.served, service.closed) + ', 남은 봉사 ' + service.outstanding + '회'
      + serviceMarks(answer.serviceCounts))];
    // The 교내봉사 sittings still ahead, for a parent meeting.
    const ahead = (answer.duties || []).filter((d) => !d.servedOn && d.slot && d.slot.date >= printed)
      .sort((a, b) => (a.slot.date + a.slot.time < b.slot.date + b.slot.time ? -1 : 1));
    if (ahead.length) {
      body.push(G.el('p', {}, '다음 교내봉사: ' + ahead.map((d) => G.day(d.slot.date) + ' ' + d.slot.time + ' ' + d.slot.place
        + (d.dueDate && d.slot.date > d.dueDate ? ' (기한 ' + G.day(d.dueDate) + ' 지남)' : '')).join(', ')));
    }
    if (answer.crossings.length) {
      body.push(G.el('h3', { class: 'section' }, '학교 규칙'),
        recordTable('학교 규칙', ['날짜', '규칙', '기준', '상태'], answer.crossings.map((c) => ({
          struck: !c.active,
          cells: [G.day(c.date), c.label, ruleText(c.rule, labels), c.active ? '통보함' : '철회 (기록 삭제)'],
        }))));
    }
    if (answer.cases.length) {
      body.push(G.el('h3', { class: 'section' }, '사안'),
        recordTable('사안', ['열린 날', '까닭', '상태', '담당', '단계'], answer.cases.map((c) => ({
          struck: c.state === 'withdrawn',
          cells: [G.day(G.today(c.openedAt)), c.label, c.stateLabel + (c.nextDate ? ' (' + G.day(c.nextDate) + ')' : ''),
            c.holder ? name(c.holder) : '규칙이 정한 선생님들', c.steps.filter((step) => !step.refused).length + '단계'],
        }))));
    }
    body.push(G.el('h3', { class: 'section' }, '지도 기록'));
    body.push(answer.guidances.length === 0 ? G.el('p', { class: 'meta' }, '지도 기록이 없습니다.')
      : recordTable('지도 기록', ['날짜', '사유', '지도 교사', '비고'], answer.guidances.map((g) => ({
        struck: Boolean(g.deletedAt),
        cells: [G.day(g.date) + ' ' + G.clock(g.occurredAt), g.reason.label + (g.reason.detail ? ' — ' + g.reason.detail : ''),
          name(g.recordedBy), g.deletedAt ? '삭제: ' + name(g.deletedBy) + ', ' + G.day(G.today(g.deletedAt)) : ''],
      }))));
    body.push(G.el('h3', { class: 'section' }, '봉사'));
    body.push(answer.services.length === 0 ? G.el('p', { class: 'meta' }, '마친 봉사가 없습니다.')
      : recordTable('봉사', ['날짜', '횟수', '메모', '확인 교사', '비고'], answer.services.map((v) => ({
        struck: Boolean(v.withdrawnAt),
        cells: [G.day(v.date), v.outcome === 'missed' ? '불참' : (v.outcome === 'closed' ? '종결 ' : '') + v.sessions + '회',
          (v.outcome === 'closed' ? '사유: ' : '') + (v.note || ''), name(v.recordedBy), v.withdrawnAt ? '취소됨' : ''],
      }))));
    // Signed on paper after a meeting; printed only.
    const signers = ['담임', '학생부장', '보호자'];
    body.push(G.el('table', { class: 'sign-off print-only' },
      G.el('caption', { class: 'visually-hidden' }, '확인'),
      G.el('tbody', {}, G.el('tr', {}, ...signers.map((who) => G.el('th', { scope: 'col' }, who))),
        G.el('tr', {}, ...signers.map(() => G.el('td', {}, ''))))));
    $('record-body').replaceChildren(...body);
  }

  // Back to the tab it was opened from, focus on the button that opened it; or (another tab chosen) just away.
  function closeRecord(back) {
    $('record').hidden = true;
    $('record-body').replaceChildren();
    record.of = null;
    if (!back) return;
    if (record.panel) record.panel.hidden = false;
    (record.from && record.from.isConnected ? record.from : $('list-title')).focus();
  }

  // The record as a file, as the server writes it (the export's columns).
  async function saveRecord() {
    try {
      await G.download(schoolURL + '/students/' + encodeURIComponent(record.of) + '/history', '학생기록-' + record.of + '.csv');
    } catch (error) {
      G.say('record-status', 'CSV로 저장하지 못했습니다. ' + G.message(error), 'warn');
    }
  }

  // 현황 (overview.js) opens records from its list of students.
  G.Record = { may: mayOpenRecord, open: openRecord };

  if ($('record')) {
    $('record-close').addEventListener('click', () => closeRecord(true));
    $('record-print').addEventListener('click', () => window.print());
    $('record-csv').addEventListener('click', saveRecord);
    for (const tab of document.querySelectorAll('[role=tab]')) tab.addEventListener('click', () => { if (!$('record').hidden) closeRecord(false); });
  }

  // --- 명단 ---

  // The days 명단 shows, as the list API asks them: '' for today, 'date=…'
  // for another day (날짜), 'from=…&to=…' for the week or month holding it
  // (기간), up to today. Beyond today only the filters the teacher may read
  // then (data-other-days) can be chosen; the one chosen moves to the first
  // of them if it cannot.
  function shownDays() {
    const picker = $('list-day');
    const day = picker && picker.value ? picker.value : schoolToday;
    const span = (document.querySelector('input[name=span]:checked') || { value: 'day' }).value;
    let query = day && day !== schoolToday ? 'date=' + day : '';
    if (span !== 'day' && day) {
      const at = new Date(day + 'T12:00:00Z');
      if (span === 'week') at.setUTCDate(at.getUTCDate() - (at.getUTCDay() + 6) % 7);
      else at.setUTCDate(1);
      const from = at.toISOString().slice(0, 10);
      if (span === 'week') at.setUTCDate(at.getUTCDate() + 6);
      else at.setUTCMonth(at.getUTCMonth() + 1, 0);
      const to = at.toISOString().slice(0, 10);
      query = 'from=' + from + '&to=' + (schoolToday && to > schoolToday ? schoolToday : to);
    }
    for (const input of document.querySelectorAll('input[name=filter]')) {
      input.disabled = query !== '' && !input.hasAttribute('data-other-days');
    }
    const chosen = document.querySelector('input[name=filter]:checked');
    if (chosen && chosen.disabled) document.querySelector('input[name=filter][data-other-days]').checked = true;
    return query;
  }

  // On a phone the choices fold into one line that says what is shown; wider, they stay open.
  if ($('list-options')) $('list-options').open = window.matchMedia('(min-width: 40rem)').matches;
  function sayShown() {
    const label = (input) => (input ? input.parentElement.textContent.trim() : '');
    const span = document.querySelector('input[name=span]:checked');
    $('list-shown').textContent = [label(document.querySelector('input[name=filter]:checked')),
      span && span.value !== 'day' ? label(span) : ''].filter(Boolean).join(' · ');
  }

  async function loadToday() {
    const days = shownDays();
    sayShown();
    const chosen = document.querySelector('input[name=filter]:checked');
    const query = [chosen ? chosen.value : '', days].filter(Boolean).join('&');
    try {
      today = await G.api('GET', schoolURL + '/guidances' + (query ? '?' + query : ''));
      G.say('list-status', '');
    } catch (error) {
      G.say('list-status', (days ? '명단' : '오늘 명단') + '을 불러오지 못했습니다. ' + G.message(error), 'warn');
      return;
    }
    if (!days) {
      schoolToday = today.date;
      const picker = $('list-day');
      // The field says the day shown: today, also after midnight with the page open.
      if (picker) picker.max = picker.value = today.date;
    }
    shown = PAGE;
    renderToday();
  }

  // 학번 as Korean schools write it: 1학년 3반 14번 is 10314.
  const studentNumber = (s) => s.grade + String(s.classNumber).padStart(2, '0') + String(s.number).padStart(2, '0');
  const byNumber = (wanted) => /^[0-9]+$/.test(wanted);

  function matching() {
    const wanted = $('list-search').value.trim();
    if (!wanted) return today.items;
    return today.items.filter((item) => (byNumber(wanted) ? studentNumber(item.student).startsWith(wanted)
      : item.student.name.includes(wanted)));
  }

  // 학생 찾기: beneath the search, the students of any day whose record the
  // teacher may open, each a button that opens it (the list above only has the day shown).
  let findAsked = 0;
  async function findStudents() {
    const list = $('found-students');
    if (!list) return;
    const wanted = $('list-search').value.trim();
    const asked = ++findAsked;
    if (!wanted) {
      list.replaceChildren();
      return;
    }
    let answer;
    try {
      answer = await G.api('GET', schoolURL + '/students?q=' + encodeURIComponent(wanted.slice(0, 20)));
    } catch (error) {
      if (asked === findAsked) list.replaceChildren(G.el('li', { class: 'meta' }, '학생을 찾지 못했습니다. ' + G.message(error)));
      return;
    }
    if (asked !== findAsked) return;
    list.replaceChildren(...answer.items.map((s) => G.el('li', {},
      G.el('button', { type: 'button', class: 'secondary', onclick: (event) => openRecord(s, event.currentTarget) },
        s.name + ' · ' + seatName(s) + ' ' + s.number + '번 (' + studentNumber(s) + ') 학생 기록'))),
      ...(answer.more ? [G.el('li', { class: 'meta' }, '더 있습니다. 더 적어 좁히세요.')] : []));
  }

  function renderToday(focusFrom) {
    $('list-name').textContent = today.from || (today.date && today.date !== schoolToday) ? '명단' : '오늘 명단';
    $('list-date').textContent = today.from ? G.day(today.from) + ' – ' + G.day(today.to) : today.date ? G.day(today.date) : '';
    const items = matching();
    const searching = $('list-search').value.trim() !== '';
    const nodes = [];
    if (today.items.length === 0) {
      nodes.push(G.el('p', { class: 'meta' }, '등록된 지도가 없습니다.'));
    } else if (items.length === 0) {
      nodes.push(G.el('p', { class: 'meta' }, '이 명단에는 찾는 학생이 없습니다.'));
    } else {
      nodes.push(G.el('p', { class: 'meta' }, (searching ? '찾은 기록 ' : '모두 ') + items.length + '건'));
      nodes.push(...grouped(items, shown, false, deletes ? removeGuidance : null, Boolean(today.from)));
      if (items.length > shown) {
        nodes.push(G.el('div', { class: 'actions' }, G.el('button', { type: 'button', class: 'secondary', id: 'more', onclick: more },
          '더 보기 (남은 ' + (items.length - shown) + '건)')));
      }
    }
    $('list-body').replaceChildren(...nodes);
    if (focusFrom !== undefined) {
      const rows = $('list-body').querySelectorAll('li.entry');
      (rows[focusFrom] || $('list-title')).focus();
    }
  }

  // A guidance recorded by mistake, deleted from 명단 by whoever may at the
  // gate (gate and admin teachers, as the ingest allows): asked first, then
  // the list is read until the notifier has applied it.
  const deletes = /(^|\+)(gate|admin)(\+|$)/.test(data.roles || '');
  async function removeGuidance(entry) {
    const s = entry.student;
    if (!(await G.ask(s.name + ' 학생의 지도(' + entry.reason.label + ')를 삭제할까요?', '삭제', '취소'))) return;
    try {
      await G.api('DELETE', schoolURL + '/grades/' + s.grade + '/guidances/' + encodeURIComponent(entry.guidanceId));
    } catch (error) {
      G.say('list-status', '삭제하지 못했습니다: ' + G.message(error), 'warn');
      return;
    }
    for (let i = 0; i < 20 && today.items.some((item) => item.guidanceId === entry.guidanceId); i++) {
      await G.sleep(300);
      await loadToday();
    }
    G.say('list-status', '삭제했습니다: ' + s.name + ' · ' + entry.reason.label, 'ok');
    $('list-title').focus();
  }

  function more() {
    const before = $('list-body').querySelectorAll('li.entry').length;
    shown += PAGE;
    renderToday(before);
  }

  let searchTimer = 0;
  $('list-search').addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => { shown = PAGE; renderToday(); findStudents(); }, 150);
  });
  $('filters').addEventListener('change', loadToday);
  if ($('list-day')) $('list-day').addEventListener('change', loadToday);
  for (const input of document.querySelectorAll('input[name=span]')) input.addEventListener('change', loadToday);

  // --- 봉사 명단 ---

  const roles = new Set((data.roles || '').split('+'));
  const recording = roles.has('volunteer_duty') || roles.has('admin');
  let service = { today: '', items: [] };
  let serviceShown = PAGE;
  // A record not yet acknowledged keeps its id, so tapping again retries it, never doubles it.
  const unsent = new Map();

  // `keepOrder`: after 봉사 1회 완료 or 되돌리기, each student stays where they were
  // (the server puts those with service left first, which would move the
  // row just touched away from the teacher's eyes and thumb).
  async function loadService(keepOrder) {
    const before = new Map(service.items.map((item, index) => [item.student.studentId, index]));
    try {
      // As of the day 날짜 says when it is not today; today's accounts otherwise.
      const day = $('service-day').value;
      service = await G.api('GET', schoolURL + '/service' + (day && day !== service.today ? '?date=' + day : ''));
      $('service-day').max = service.today;
      if (!day) $('service-day').value = service.today;
      G.say('service-status', '');
    } catch (error) {
      G.say('service-status', '봉사 명단을 불러오지 못했습니다. ' + G.message(error), 'warn');
      return;
    }
    if (keepOrder) {
      const at = (item) => (before.has(item.student.studentId) ? before.get(item.student.studentId) : before.size);
      service.items = service.items.map((item, index) => [item, index]).sort((a, b) => at(a[0]) - at(b[0]) || a[1] - b[1]).map(([item]) => item);
    }
    renderClassChoices();
    renderService();
  }

  // The classes the list holds, for its class filter.
  function renderClassChoices() {
    const select = $('service-class');
    const chosen = select.value;
    const classes = [...new Map(service.items.map((item) => {
      const s = item.student;
      return [s.grade + '-' + s.classNumber, roles.has('admin') ? s.grade + '학년 ' + s.classNumber + '반' : s.classNumber + '반'];
    })).entries()].sort((a, b) => a[0].localeCompare(b[0], undefined, { numeric: true }));
    select.replaceChildren(G.el('option', { value: '' }, '모든 반'),
      ...classes.map(([value, label]) => G.el('option', { value, selected: value === chosen }, label)));
  }

  // What the search and the class filter leave of the list.
  function serviceMatches() {
    const query = $('service-search').value.trim();
    const chosen = $('service-class').value;
    return service.items.filter((item) => (!query || item.student.name.includes(query))
      && (!chosen || item.student.grade + '-' + item.student.classNumber === chosen));
  }
  if ($('service-search')) {
    $('service-day').addEventListener('change', () => { serviceShown = PAGE; loadService(); });
    $('service-search').addEventListener('input', () => { serviceShown = PAGE; renderService(); });
    $('service-class').addEventListener('change', () => { serviceShown = PAGE; renderService(); });
  }

  // "1반 12번" in a grade or class; "1학년 1반 12번" for the school.
  const serviceSeat = (s) => (roles.has('admin') ? seatName(s) + ' ' : s.classNumber + '반 ') + s.number + '번';

  const stateWords = { scheduled: '예정', served: '완료', closed: '종결', missed: '불참', overdue: '기한 지남', unconfirmed: '확인 필요', lateSeat: '기한 내 자리 없음' };
  // "11월 17일(화) 16:00 상담실"
  const sittingText = (slot) => G.day(slot.date) + ' ' + slot.time + ' ' + slot.place;

  // A sitting on `today` or later is where the student goes ("다음 배정 일정"); one already past that
  // nobody marked says so, never "next" for a past day.
  const seatText = (slot, today, word) =>
    slot.date < today ? G.day(slot.date) + ' 배정 일정에 완료·불참 기록 없음' : word + sittingText(slot);

  // Where a student stands in the school's schedule: "기한 지남 · 기한 11월 19일(목) · 다음 배정 일정 11월 24일(화) 16:00 상담실".
  function scheduleLine(item) {
    if (!item.state) return null;
    const parts = ['기한 ' + (item.dueDate ? G.day(item.dueDate) : '없음')];
    if (item.slot && item.state !== 'served' && item.state !== 'closed') parts.push(seatText(item.slot, service.today, item.state === 'scheduled' ? '배정 일정 ' : '다음 배정 일정 '));
    return G.el('p', { class: 'often' }, G.el('span', { class: 'state state-' + item.state }, '교내봉사 ' + stateWords[item.state]), ' · ' + parts.join(' · '));
  }

  // A student as a row: photo, name and seat, what is left; the newest guidance; sessions done and 봉사 1회 완료; each record with 되돌리기.
  function serviceRow(item, index) {
    const s = item.student;
    // A past day's list is read, not recorded on (봉사 is recorded on the day it is served).
    const recorder = recording && !service.date;
    const nameId = 'service-name-' + index;
    const last = item.lastGuidance;
    // A 종결 says why; only an admin takes one back.
    const records = item.services.map((record) => G.el('li', {},
      G.el('span', {}, G.day(record.date) + ' ' + (record.outcome === 'closed' ? '종결 ' : '') + record.sessions + '회'
        + (record.outcome === 'closed' ? ' · 사유: ' + record.note : '') + (record.recordedByName ? ' · ' + record.recordedByName : '')),
      recorder && (record.outcome !== 'closed' || roles.has('admin')) ? G.el('button', { type: 'button', class: 'secondary', 'aria-describedby': nameId,
        onclick: () => withdraw(item, record) }, '되돌리기') : null));
    return G.el('li', { class: 'entry' + (item.outstanding > 0 ? ' owing' : ''), tabindex: '-1', 'data-student': s.studentId },
      photo(item.photoUrl, s.name),
      G.el('div', { class: 'entry-text' },
        G.el('p', { class: 'entry-head' },
          G.el('span', { class: 'who', id: nameId }, G.el('strong', {}, s.name), ' ', G.el('span', { class: 'entry-seat' }, serviceSeat(s))),
          G.el('span', { class: 'left' }, serviceLeft(item.outstanding))),
        last ? G.el('p', { class: 'often' }, lastGuidance(last.occurredAt, last.reason.label)) : null,
        scheduleLine(item),
        G.el('p', { class: 'service-line' },
          G.el('span', { class: 'often' }, serviceDone(item.owed, item.served, item.closed) + serviceMarks(item)),
          recorder && item.outstanding > 0
            ? G.el('button', { type: 'button', 'aria-describedby': nameId, onclick: () => served(item) }, '봉사 1회 완료') : null,
          recorder && item.outstanding > 0 && roles.has('admin')
            ? G.el('button', { type: 'button', class: 'secondary', 'aria-describedby': nameId, 'aria-expanded': 'false',
              onclick: (event) => closingForm(item, event.currentTarget) }, '남은 봉사 종결') : null),
        records.length ? G.el('ul', { class: 'services' }, ...records) : null));
  }

  function renderService(focusStudent) {
    const owing = service.items.filter((item) => item.outstanding > 0).length;
    $('service-count').textContent = service.items.length ? '봉사 남은 학생 ' + owing + '명' : '';
    const items = serviceMatches();
    const nodes = [];
    if (service.items.length === 0) nodes.push(G.el('p', { class: 'meta' }, '봉사할 학생이 없습니다.'));
    else if (items.length === 0) nodes.push(G.el('p', { class: 'meta' }, '찾는 학생이 없습니다.'));
    nodes.push(G.el('ul', { class: 'entries' }, ...items.slice(0, serviceShown).map(serviceRow)));
    if (items.length > serviceShown) {
      nodes.push(G.el('div', { class: 'actions' }, G.el('button', { type: 'button', class: 'secondary',
        onclick: () => { serviceShown += PAGE; renderService(); } }, '더 보기 (남은 ' + (items.length - serviceShown) + '명)')));
    }
    $('service-body').replaceChildren(...nodes);
    if (focusStudent) {
      const row = $('service-body').querySelector('li[data-student="' + CSS.escape(focusStudent) + '"]');
      (row || $('service-title')).focus();
    }
  }

  // The notifier stores what the ingest acknowledged within moments: the list is read until it shows it.
  async function until(reflected, studentId) {
    for (let i = 0; i < 20; i++) {
      await loadService(true);
      const item = service.items.find((x) => x.student.studentId === studentId);
      if (reflected(item)) { renderService(studentId); return true; }
      await G.sleep(300);
    }
    renderService(studentId);
    return false;
  }

  async function served(item) {
    const s = item.student;
    const serviceId = unsent.get(s.studentId) || G.uuid();
    unsent.set(s.studentId, serviceId);
    G.say('service-status', s.name + ' 봉사를 기록하는 중…');
    try {
      await G.api('POST', schoolURL + '/grades/' + s.grade + '/students/' + encodeURIComponent(s.studentId) + '/service',
        { serviceId, date: service.today, sessions: 1 });
    } catch (error) {
      G.say('service-status', s.name + ' 봉사를 기록하지 못했습니다. 봉사 1회 완료를 다시 누르면 같은 기록으로 다시 보냅니다. ' + G.message(error), 'warn');
      return;
    }
    unsent.delete(s.studentId);
    const shown = await until((x) => x && x.services.some((r) => r.serviceId === serviceId), s.studentId);
    G.say('service-status', shown ? s.name + ' 봉사 1회를 기록했습니다.' : s.name + ' 봉사를 기록했습니다. 명단에는 곧 보입니다.', 'ok');
  }

  // 남은 봉사 종결 (admins): the sessions left closed with a reason (a transfer, the year's end), said in the 명단.
  function closingForm(item, button) {
    const s = item.student;
    const open = button.parentElement.nextElementSibling;
    if (open && open.classList.contains('closing')) { open.remove(); button.setAttribute('aria-expanded', 'false'); return; }
    const id = 'closing-' + s.studentId.replace(/[^A-Za-z0-9_-]/g, '_');
    // A refusal is said beside the field too: the list's status line may be a long list away.
    const hintId = id + '-hint';
    const reason = G.el('input', { id, type: 'text', maxlength: '200', 'aria-required': 'true', 'aria-describedby': hintId, autocomplete: 'off' });
    const form = G.el('form', { class: 'closing' },
      G.el('label', { for: id }, s.name + ' 남은 봉사 ' + item.outstanding + '회 종결 사유'), reason, G.el('p', { id: hintId, class: 'status' }),
      G.el('div', { class: 'actions' }, G.el('button', { type: 'submit' }, '종결'),
        G.el('button', { type: 'button', class: 'secondary', onclick: () => { form.remove(); button.setAttribute('aria-expanded', 'false'); button.focus(); } }, '취소')));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      if (!reason.value.trim()) {
        G.say('service-status', '종결 사유를 쓰세요.', 'warn');
        G.say(hintId, '종결 사유를 쓰세요.', 'warn');
        reason.setAttribute('aria-invalid', 'true');
        reason.focus();
        return;
      }
      reason.removeAttribute('aria-invalid');
      G.say(hintId, '');
      closeOwed(item, reason.value.trim());
    });
    button.parentElement.after(form);
    button.setAttribute('aria-expanded', 'true');
    reason.focus();
  }

  async function closeOwed(item, note) {
    const s = item.student;
    const key = 'closed/' + s.studentId;
    const serviceId = unsent.get(key) || G.uuid();
    unsent.set(key, serviceId);
    G.say('service-status', s.name + ' 남은 봉사를 종결하는 중…');
    try {
      await G.api('POST', schoolURL + '/grades/' + s.grade + '/students/' + encodeURIComponent(s.studentId) + '/service',
        { serviceId, date: service.today, sessions: Math.min(item.outstanding, 20), outcome: 'closed', note });
    } catch (error) {
      G.say('service-status', s.name + ' 봉사를 종결하지 못했습니다. 종결을 다시 누르면 같은 기록으로 다시 보냅니다. ' + G.message(error), 'warn');
      return;
    }
    unsent.delete(key);
    const shown = await until((x) => x && x.services.some((r) => r.serviceId === serviceId), s.studentId);
    G.say('service-status', shown ? s.name + ' 남은 봉사를 종결했습니다.' : s.name + ' 봉사를 종결했습니다. 명단에는 곧 보입니다.', 'ok');
  }

  async function withdraw(item, record) {
    const s = item.student;
    G.say('service-status', s.name + ' 봉사 기록을 되돌리는 중…');
    try {
      await G.api('DELETE', schoolURL + '/grades/' + s.grade + '/students/' + encodeURIComponent(s.studentId) + '/service/' +
        encodeURIComponent(record.serviceId));
    } catch (error) {
      G.say('service-status', '되돌리지 못했습니다. ' + G.message(error), 'warn');
      return;
    }
    const shown = await until((x) => !x || !x.services.some((r) => r.serviceId === record.serviceId), s.studentId);
    G.say('service-status', shown ? s.name + ' ' + G.day(record.date) + ' 봉사 기록을 되돌렸습니다.' : '되돌렸습니다. 명단에는 곧 보입니다.', 'ok');
  }

  // --- 오늘 교내봉사 ---

  let sittings = null;
  // A mark not yet acknowledged keeps its id, so tapping again retries it, never doubles it.
  const unsentMarks = new Map();

  async function loadSittings() {
    const day = $('sitting-day').value;
    try {
      sittings = await G.api('GET', schoolURL + '/service/sittings' + (day ? '?date=' + day : ''));
      if (!day) $('sitting-day').value = sittings.date;
      G.say('sitting-status', '');
    } catch (error) {
      G.say('sitting-status', '오늘 교내봉사를 불러오지 못했습니다. ' + G.message(error), 'warn');
      return false;
    }
    renderSittings();
    return true;
  }

  function renderSittings(focusDuty) {
    const nodes = [];
    const all = sittings.sittings.flatMap((sitting) => sitting.items);
    $('sitting-count').textContent = all.length ? '대상 ' + all.filter((x) => x.state !== 'missed').length + '명 · 완료 '
      + all.filter((x) => x.state === 'served').length + '명' : '';
    if (!sittings.schoolDay) nodes.push(G.el('p', { class: 'meta' }, (sittings.dayOff ? sittings.dayOff + ': ' : '') + '학교가 쉬는 날입니다.'));
    else if (sittings.sittings.length === 0) nodes.push(G.el('p', { class: 'meta' }, '이날은 교내봉사 시간이 없습니다.'));
    let index = 0;
    for (const sitting of sittings.sittings) {
      nodes.push(G.el('h3', { class: 'section' }, sitting.time
        ? sitting.time + ' ' + sitting.place + ' (' + sitting.items.filter((x) => x.state !== 'missed').length + '/' + sitting.capacity + '명)'
        : '다른 날 자리에서 한 봉사'));
      nodes.push(sitting.items.length ? G.el('ul', { class: 'entries' }, ...sitting.items.map((item) => sittingRow(item, index++)))
        : G.el('p', { class: 'meta' }, '대상 학생이 없습니다.'));
    }
    $('sitting-body').replaceChildren(...nodes);
    if (focusDuty) {
      const row = $('sitting-body').querySelector('li[data-duty="' + CSS.escape(focusDuty) + '"]');
      const target = row && (row.querySelector('button') || row);
      (target || $('sitting-title')).focus();
    }
  }

  // A student due at a sitting: 완료 and 불참, one tap each; once marked, its state and 되돌리기.
  function sittingRow(item, index) {
    const s = item.student;
    const nameId = 'sitting-name-' + index;
    // Marks are for a day that came; a later day's sittings are read.
    const open = sittings.date <= sittings.today;
    // 확인 필요 (a past sitting nobody marked) gets the same two taps as 예정.
    const buttons = !open ? [] : item.state === 'scheduled' || item.state === 'unconfirmed'
      ? [G.el('button', { type: 'button', 'aria-describedby': nameId, onclick: () => mark(item, 'served') }, '완료'),
        G.el('button', { type: 'button', class: 'secondary', 'aria-describedby': nameId, onclick: () => mark(item, 'missed') }, '불참')]
      : [G.el('button', { type: 'button', class: 'secondary', 'aria-describedby': nameId, onclick: () => unmark(item) }, '되돌리기')];
    return G.el('li', { class: 'entry', tabindex: '-1', 'data-duty': item.dutyId },
      photo(item.photoUrl, s.name),
      G.el('div', { class: 'entry-text' },
        G.el('p', { class: 'entry-head' },
          G.el('span', { class: 'who', id: nameId }, G.el('strong', {}, s.name), ' ', G.el('span', { class: 'entry-seat' }, serviceSeat(s))),
          G.el('span', { class: 'state state-' + item.state }, stateWords[item.state])),
        item.dueDate ? G.el('p', { class: 'often' }, '기한 ' + G.day(item.dueDate)) : null,
        item.slot ? G.el('p', { class: 'often' }, seatText(item.slot, sittings.today, '다음 배정 일정 ')) : null,
        buttons.length ? G.el('p', { class: 'service-line marks' }, ...buttons) : null));
  }

  // The notifier stores what the ingest acknowledged within moments: read until a row shows it.
  async function untilSitting(reflected, dutyId) {
    for (let i = 0; i < 20; i++) {
      if (await loadSittings()) {
        const item = sittings.sittings.flatMap((sitting) => sitting.items).find((x) => x.dutyId === dutyId);
        if (reflected(item)) { renderSittings(dutyId); return true; }
      }
      await G.sleep(300);
    }
    return false;
  }

  async function mark(item, outcome) {
    const s = item.student;
    const key = item.dutyId + ' ' + outcome;
    const serviceId = unsentMarks.get(key) || G.uuid();
    unsentMarks.set(key, serviceId);
    const word = stateWords[outcome];
    G.say('sitting-status', s.name + ' ' + word + ' 기록하는 중…');
    try {
      await G.api('POST', schoolURL + '/grades/' + s.grade + '/students/' + encodeURIComponent(s.studentId) + '/service',
        { serviceId, date: sittings.date, sessions: 1, outcome, dutyId: item.dutyId });
    } catch (error) {
      G.say('sitting-status', s.name + ' ' + word + ' 기록하지 못했습니다. 다시 누르면 같은 기록으로 다시 보냅니다. ' + G.message(error), 'warn');
      return;
    }
    unsentMarks.delete(key);
    const shown = await untilSitting((x) => x && x.state === outcome, item.dutyId);
    G.say('sitting-status', s.name + ' ' + word + (outcome === 'missed' ? ': 자리가 남은 다음 시간으로 옮겼습니다.' : '로 기록했습니다.')
      + (shown ? '' : ' 목록에는 곧 보입니다.'), 'ok');
  }

  async function unmark(item) {
    const s = item.student;
    G.say('sitting-status', s.name + ' ' + stateWords[item.state] + ' 기록을 되돌리는 중…');
    try {
      await G.api('DELETE', schoolURL + '/grades/' + s.grade + '/students/' + encodeURIComponent(s.studentId) + '/service/' +
        encodeURIComponent(item.serviceId));
    } catch (error) {
      G.say('sitting-status', '되돌리지 못했습니다. ' + G.message(error), 'warn');
      return;
    }
    const shown = await untilSitting((x) => x && (x.state === 'scheduled' || x.state === 'unconfirmed'), item.dutyId);
    G.say('sitting-status', s.name + ' 기록을 되돌렸습니다.' + (shown ? '' : ' 목록에는 곧 보입니다.'), 'ok');
  }

  if ($('sitting-day')) $('sitting-day').addEventListener('change', loadSittings);

  // --- 설정 ---

  const settingsURL = '/v1/teachers/' + encodeURIComponent(data.teacher) + '/settings';

  // The times as the form shows them: the teacher's own (empty: the
  // school's) and the quiet hours (off: none).
  function showTimes(settings) {
    $('school-time').textContent = '(비우면 학교 시각 ' + settings.schoolTime + ')';
    $('list-time').value = settings.listTime || '';
    $('quiet-on').checked = settings.quietFrom !== null;
    $('quiet-from').value = settings.quietFrom || '21:00';
    $('quiet-until').value = settings.quietUntil || '07:00';
    $('times-save').disabled = false;
  }

  async function loadSettings() {
    try {
      const settings = await G.api('GET', settingsURL);
      $('email-lists').checked = settings.emailLists;
      $('email-lists').disabled = false;
      showTimes(settings);
      await showPush(settings.pushKey);
    } catch (error) {
      G.say('settings-status', '설정을 불러오지 못했습니다. ' + G.message(error), 'warn');
    }
  }

  async function saveTimes(event) {
    event.preventDefault();
    const quiet = $('quiet-on').checked;
    const body = { listTime: $('list-time').value || null,
                   quietFrom: quiet ? $('quiet-from').value : null, quietUntil: quiet ? $('quiet-until').value : null };
    try {
      showTimes(await G.api('POST', settingsURL, body));
      G.say('settings-status', '시각을 저장했습니다. 다음 명단부터 따릅니다.', 'ok');
    } catch (error) {
      // The reason in the teacher's words, for each field the API names.
      const quiet = '알림을 쉬는 시간의 시작과 끝을 둘 다, 서로 다르게 정하세요.';
      G.say('settings-status', '저장하지 못했습니다. ' + G.message(error, {
        listTime: '명단 시각은 방해 금지 시간 밖으로 정하세요.',
        quietFrom: quiet,
        quietUntil: quiet,
      }), 'warn');
    }
  }
  if ($('times')) $('times').addEventListener('submit', saveTimes);

  // --- 이 기기에서 알림 받기 (Web Push): shown when the server has a VAPID
  // key and the browser can push. The browser's permission is asked only
  // when the teacher turns it on. A subscription kept on this device is
  // sent again each time 설정 opens: it lives as long as this session.
  const pushURL = '/v1/teachers/' + encodeURIComponent(data.teacher) + '/push';
  let pushKey = null;
  const canPush = () => 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;

  async function showPush(key) {
    pushKey = key;
    const shown = Boolean(key) && canPush();
    $('push-choice').hidden = !shown;
    $('push-note').hidden = !shown;
    // Where push cannot be had, say why instead of showing nothing.
    $('push-none').hidden = shown;
    $('push-none').textContent = shown ? '' : !key ? '이 학교 서버에서는 기기 알림을 쓰지 않습니다. 명단은 알림함과 이메일로 받습니다.'
      : '이 브라우저는 기기 알림을 받을 수 없습니다. 명단은 알림함과 이메일로 받습니다.';
    if (!shown) return;
    const subscription = await (await navigator.serviceWorker.ready).pushManager.getSubscription();
    $('push-on').checked = Boolean(subscription) && Notification.permission === 'granted';
    if ($('push-on').checked) await G.api('POST', pushURL, subscription.toJSON());
  }

  // The key as the browser takes it: bytes of its base64url text.
  const keyBytes = (text) => Uint8Array.from(atob(text.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));

  async function changePush() {
    const box = $('push-on');
    const wanted = box.checked;
    try {
      const registration = await navigator.serviceWorker.ready;
      if (wanted) {
        if (await Notification.requestPermission() !== 'granted') {
          box.checked = false;
          G.say('settings-status', '브라우저에서 알림이 허용되지 않았습니다. 브라우저 설정에서 허용한 뒤 다시 켜 주세요.', 'warn');
          return;
        }
        const subscription = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(pushKey) });
        await G.api('POST', pushURL, subscription.toJSON());
        G.say('settings-status', '이 기기에서 명단 알림을 받습니다.', 'ok');
      } else {
        const subscription = await registration.pushManager.getSubscription();
        if (subscription) {
          await G.api('POST', pushURL + '/remove', { endpoint: subscription.endpoint });
          await subscription.unsubscribe();
        }
        G.say('settings-status', '이 기기의 알림을 껐습니다.', 'ok');
      }
    } catch (error) {
      box.checked = !wanted;
      G.say('settings-status', '바꾸지 못했습니다. ' + G.message(error), 'warn');
    }
  }
  if ($('push-on')) $('push-on').addEventListener('change', changePush);

  // Each time the app opens, a subscription this device keeps is sent
  // again: the server keeps it as long as the session that sent it lives,
  // and a session in daily use lives on. Quietly: without push on the
  // server, or offline, nothing changes.
  async function renewPush() {
    if (!canPush() || Notification.permission !== 'granted') return;
    const registration = await navigator.serviceWorker.getRegistration();
    const subscription = registration && await registration.pushManager.getSubscription();
    if (subscription) await G.api('POST', pushURL, subscription.toJSON());
  }
  if (data.teacher) renewPush().catch(() => {});

  async function saveEmailLists() {
    const box = $('email-lists');
    const wanted = box.checked;
    try {
      box.checked = (await G.api('POST', settingsURL, { emailLists: wanted })).emailLists;
      G.say('settings-status', wanted ? '명단을 이메일로도 받습니다.' : '다음 명단부터 알림함에만 옵니다.', 'ok');
    } catch (error) {
      box.checked = !wanted;
      G.say('settings-status', '바꾸지 못했습니다. ' + G.message(error), 'warn');
    }
  }
  if ($('email-lists')) $('email-lists').addEventListener('change', saveEmailLists);

  // --- 관리 ---

  let running = false;
  async function run() {
    const button = $('run');
    if (running) return;
    // Sent before the school's time, every record after it goes out again as an 정정 of each class: asked first.
    if (!(await G.ask('오늘 명단을 지금 모든 담임·봉사 담당 교사에게 보냅니다. 이후에 등록되는 기록은 반마다 정정 명단으로 다시 갑니다. 지금 보낼까요?',
      '지금 보내기', '취소'))) {
      G.say('run-status', '보내지 않았습니다.');
      return;
    }
    running = true;
    // aria-disabled, not disabled: a disabled button loses focus to <body>.
    button.setAttribute('aria-disabled', 'true');
    G.say('run-status', '명단을 만들어 보내는 중…');
    try {
      const answer = await G.api('POST', '/v1/digests/run', {});
      const written = answer.runs.reduce((sum, r) => sum + r.digests, 0);
      const day = answer.runs[0] ? G.day(answer.runs[0].date) + ' ' : '';
      G.say('run-status', written ? day + '명단 ' + written + '개를 보냈습니다.' : day + '새로 보낼 명단이 없습니다. 바뀐 기록이 없습니다.', 'ok');
      loadFailed();
    } catch (error) {
      G.say('run-status', '보내지 못했습니다. ' + G.message(error), 'warn');
    } finally {
      running = false;
      button.removeAttribute('aria-disabled');
    }
  }

  // Why a delivery failed, in words an admin can act on; the raw reply stays in the server's log.
  function failure(item) {
    const error = item.lastError || '';
    const status = /^HTTP (\d+)/.exec(error);
    if (status) return '받는 서버가 거절했습니다(응답 ' + status[1] + '). 학교 담당자에게 웹훅 설정을 확인해 달라고 하세요.';
    if (/^gave up/.test(error)) return '여러 번 보냈지만 받는 서버에 닿지 못했습니다.';
    if (/not an e-mail address/.test(error)) return '명부의 이메일 주소가 올바르지 않습니다.';
    if (/roster|webhooks\.csv/.test(error)) return '명부에서 받을 곳이 없어졌습니다.';
    return item.channel === 'email' ? '메일 서버가 받지 않았습니다. 주소를 확인하세요.' : '받는 서버가 받지 않았습니다.';
  }

  async function loadFailed() {
    let items;
    try {
      items = (await G.api('GET', schoolURL + '/deliveries?status=failed&limit=50')).items;
    } catch (error) {
      G.say('failed-status', '보내지 못한 알림을 불러오지 못했습니다. ' + G.message(error), 'warn');
      return;
    }
    $('failed-empty').hidden = items.length > 0;
    $('failed').replaceChildren(...items.map((item) => G.el('li', {},
      G.el('div', {},
        G.el('div', {}, (item.teacherName || '명부에 없는 교사') + ' · ' + (item.channel === 'email' ? '이메일' : '웹훅')),
        G.el('div', { class: 'meta' }, '시도 ' + item.attempts + '회 · ' + failure(item))),
      G.el('button', { type: 'button', class: 'secondary', onclick: () => retry(item) }, '다시 보내기'))));
  }

  async function retry(item) {
    try {
      await G.api('POST', schoolURL + '/deliveries/' + encodeURIComponent(item.deliveryId) + '/retry');
      G.say('failed-status', (item.teacherName || '') + ' 선생님께 다시 보내도록 했습니다.', 'ok');
    } catch (error) {
      G.say('failed-status', '다시 보내지 못했습니다. ' + G.message(error), 'warn');
    }
    await loadFailed();
    $('failed-title').focus();
  }

  // --- 접속 기록 ---

  const actionNames = { list: '명단 조회', inbox: '알림함 열람', student: '학생 조회', class: '반 학생 조회', photo: '사진 조회',
    export: '기록 내보내기', erase: '기록 삭제', 'access-log': '접속 기록 조회', service: '봉사 명단 조회',
    history: '학생 기록 열람', overview: '현황 조회', cases: '할 일 조회', case: '사안 열람', roster: '명부' };

  // "date=2026-12-01&grade=1&classNumber=3" -> "12월 1일(화) 1학년 3반" (a period "from=…&to=…" as its two days);
  // "1-3" -> "1학년 3반"; ids as they are.
  function targetText(item) {
    if (['list', 'access-log', 'service', 'overview'].includes(item.action)) {
      const q = new URLSearchParams(item.target);
      return [q.get('date') && G.day(q.get('date')), q.get('from') && G.day(q.get('from')) + '–' + G.day(q.get('to')),
        q.get('grade') && q.get('grade') + '학년',
        (q.get('classNumber') || q.get('class')) && (q.get('classNumber') || q.get('class')) + '반'].filter(Boolean).join(' ') || '학교 전체';
    }
    if (item.action === 'class') return item.target.replace(/^(\d+)-(\d+)$/, '$1학년 $2반');
    if (item.action === 'inbox') return '알림함';
    if (item.action === 'roster') {
      const v = /^version=(\d+)(?: restores=(\d+))?$/.exec(item.target);
      const photos = /^photos=(\d+)$/.exec(item.target);
      if (photos) return '사진 ' + photos[1] + '장 적용';
      const previews = { preview: '학생 명부 미리 보기', 'teachers preview': '교사 명단 미리 보기', 'photos preview': '사진 미리 보기' };
      return v ? '버전 ' + v[1] + (v[2] ? ' 적용(버전 ' + v[2] + ' 되돌림)' : ' 적용') : (previews[item.target] || item.target);
    }
    if (item.action === 'cases') return item.target === 'scope=school' ? '학교 전체 사안' : '내 할 일';
    if (item.action === 'erase') return '학생 (지운 기록)';
    return item.targetName || '명부에 없는 학생';
  }

  // The records asked for (kind and teacher by the server, a student's name
  // here), 50 more with each 더 보기; a teacher's photos of one day are one line.
  let accessLimit = 50;
  let access = [];

  // The search, the kind, the teacher and the count are the server's, over
  // the whole period chosen; the page shows the newest `accessLimit`.
  async function loadAccess() {
    const days = Number($('access-period').value) || 7;
    const query = new URLSearchParams({ limit: String(accessLimit), from: G.today(new Date(Date.now() - (days - 1) * 86400000).toISOString()) });
    if ($('access-kind').value) query.set('action', $('access-kind').value);
    if ($('access-teacher').value) query.set('teacherId', $('access-teacher').value);
    const name = $('access-student').value.trim();
    if (name) query.set('studentName', name);
    let answer;
    try {
      answer = await G.api('GET', schoolURL + '/access-log?' + query);
    } catch (error) {
      G.say('access-status', '접속 기록을 불러오지 못했습니다. ' + G.message(error), 'warn');
      return;
    }
    access = answer.items;
    $('access-more').hidden = access.length >= answer.total;
    $('access-count').textContent = answer.total ? answer.total + '건' + (answer.total > access.length ? ' 중 최근 ' + access.length + '건' : '') : '';
    G.say('access-status', answer.total ? '' : name ? '찾는 기록이 없습니다.' : '이 기간에 기록이 없습니다.');
    renderAccess();
  }

  function renderAccess() {
    // One line per teacher and day for photos, where the newest of them was.
    const lines = [];
    const photos = new Map();
    for (const item of access) {
      if (item.action !== 'photo') { lines.push({ items: [item] }); continue; }
      const key = item.teacherId + ' ' + G.today(item.at);
      if (!photos.has(key)) { photos.set(key, { items: [] }); lines.push(photos.get(key)); }
      photos.get(key).items.push(item);
    }
    // Teachers see who, not addresses (the API keeps the client address for an investigation).
    $('access-list').replaceChildren(...lines.map(({ items: group }) => {
      const item = group[0];
      const who = (item.teacherName || '명부에 없는 교사') + ' · ';
      if (group.length > 1) {
        const names = [...new Set(group.map((i) => i.targetName || '명부에 없는 학생'))];
        return G.el('li', {}, G.el('div', {},
          G.el('div', {}, who + '사진 ' + group.length + '건'),
          G.el('div', { class: 'meta' }, G.day(G.today(item.at)) + ' ' + G.clock(group[group.length - 1].at) + '–' + G.clock(item.at) + ' · '
            + names.slice(0, 5).join(', ') + (names.length > 5 ? ' 외 ' + (names.length - 5) + '명' : ''))));
      }
      return G.el('li', {}, G.el('div', {},
        G.el('div', {}, who + (actionNames[item.action] || item.action) + ' · ' + targetText(item)),
        G.el('div', { class: 'meta' }, G.day(G.today(item.at)) + ' ' + G.clock(item.at))));
    }));
  }

  // The admin's page only.
  function setUpAccess() {
    $('access-kind').replaceChildren(G.el('option', { value: '' }, '모든 종류'),
      ...Object.entries(actionNames).map(([value, label]) => G.el('option', { value }, label)));
    for (const id of ['access-period', 'access-kind', 'access-teacher']) $(id).addEventListener('change', () => { accessLimit = 50; loadAccess(); });
    let typing = 0;
    $('access-student').addEventListener('input', () => {
      clearTimeout(typing);
      typing = setTimeout(() => { accessLimit = 50; loadAccess(); }, 300);
    });
    $('access-more').addEventListener('click', () => { accessLimit += 50; loadAccess(); });
  }

  // 교내봉사 일정: four weeks of the school's seats against the sessions due, and an admin's added sitting.
  async function loadPlan() {
    let plan;
    try {
      plan = await G.api('GET', schoolURL + '/service/plan');
      G.say('plan-status', '');
    } catch (error) {
      G.say('plan-status', '교내봉사 일정을 불러오지 못했습니다. ' + G.message(error), 'warn');
      return;
    }
    // A sitting is added from the school's today on.
    if ($('add-sitting-date')) $('add-sitting-date').min = plan.today;
    const short = plan.weeks.filter((week) => week.short > 0);
    $('plan-short').hidden = short.length === 0;
    $('plan-short').textContent = short.length === 0 ? '' : '기한 안에 자리가 모자랍니다: '
      + short.map((week) => G.day(week.start) + ' 주 ' + week.short + '건').join(', ')
      + (roles.has('admin') ? '. 아래에서 봉사 일정을 더하세요.' : '. 학생부장에게 봉사 일정을 더해 달라고 하세요.');
    // A week a line (it wraps on a phone), its sittings under it.
    const weeks = plan.weeks.map((week) => G.el('li', { class: 'plan-week' },
      G.el('p', {}, G.el('strong', {}, G.day(week.start) + ' 주'),
        ' · ' + (week.seats ? '자리 ' + week.seats + '석 중 ' + week.taken + '석 배정' : '봉사 시간 없음') + ' · 기한 도래 ' + week.due + '건 · ',
        G.el('span', { class: week.short > 0 ? 'short' : '' }, '기한 내 자리 없음 ' + week.short + '건')),
      week.sittings.length ? G.el('ul', { class: 'plan-sittings' }, ...week.sittings.map((sitting) => G.el('li', {},
        G.day(sitting.date) + ' ' + sitting.time + ' ' + sitting.place + ' ' + sitting.taken + '/' + sitting.capacity + '명'
        + (sitting.added ? ' (추가)' : '')))) : null));
    $('plan-body').replaceChildren(G.el('ul', { class: 'plain' }, ...weeks));
  }

  // What the ingest's 422 names, in the form's words.
  const sittingFields = {
    date: '날짜는 오늘부터 120일 안에서 고르세요.',
    time: '그 시각에는 매주 하는 봉사가 있습니다. 다른 시각을 고르세요.',
    place: '장소는 40자 안으로 적어 주세요.',
    capacity: '인원은 1명에서 500명 사이로 적어 주세요.',
  };
  // An added sitting keeps its id until acknowledged, so a second tap retries it, never adds two.
  let unsentSitting = null;
  async function addSitting(event) {
    event.preventDefault();
    const body = { sittingId: unsentSitting || G.uuid(), date: $('add-sitting-date').value, time: $('add-sitting-time').value,
      place: $('add-sitting-place').value.trim(), capacity: Number($('add-sitting-capacity').value) };
    if (!body.date || !body.time || !body.place || !(body.capacity >= 1)) {
      G.say('add-sitting-status', '날짜, 시각, 장소와 인원을 모두 적어 주세요.', 'warn');
      return;
    }
    unsentSitting = body.sittingId;
    G.say('add-sitting-status', '더하는 중…');
    try {
      await G.api('POST', schoolURL + '/service/sittings', body);
    } catch (error) {
      if (error.status === 422) unsentSitting = null;
      G.say('add-sitting-status', '일정을 더하지 못했습니다. ' + G.message(error, sittingFields), 'warn');
      return;
    }
    unsentSitting = null;
    G.say('add-sitting-status', G.day(body.date) + ' ' + body.time + ' ' + body.place + ' ' + body.capacity + '명 일정을 더했습니다.');
    // The notifier seats the waiting sessions within moments; the plan and the list show it.
    await G.sleep(800);
    loadPlan();
    loadService(true);
  }
  if ($('add-sitting')) $('add-sitting').addEventListener('submit', addSitting);

  // Each tab reads what it shows when it is opened (and again each time), not before.
  G.whenShown('panel-lists', loadToday);
  G.whenShown('panel-service', () => { if ($('sitting-day')) loadSittings(); if ($('plan-body')) loadPlan(); loadService(); });
  G.whenShown('panel-settings', () => { if ($('email-lists')) loadSettings(); });
  if (roles.has('admin')) {
    $('run').addEventListener('click', run);
    setUpAccess();
    G.whenShown('panel-admin', () => { loadFailed(); loadAccess(); });
  }
  // Homeroom and volunteer-duty teachers receive lists: the 알림함 (a digest's link opens one of them).
  if ($('inbox')) {
    $('digest-close').addEventListener('click', closeDigest);
    $('inbox-empty').dataset.none = $('inbox-empty').textContent;
    $('inbox-day').addEventListener('change', renderInbox);
    // The badge from the moment the app opens: the count alone (no student
    // is named, so nothing is read before the tab is opened).
    G.api('GET', inboxURL + '/unread').then((answer) => { if (!digests.length) showUnread(answer.unreadCount); }, () => {});
    let opening = data.open;
    G.whenShown('panel-inbox', () => loadInbox().then(() => {
      if (opening) open(opening);
      opening = null;
    }));
  }
})();
