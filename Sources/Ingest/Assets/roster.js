// 관리 → 명부: the school's students and photos as its admin keeps them. A file (CSV as
// Korean Excel saves it, or XLSX) is previewed first: new students, those
// who left, seats that moved, names changed and rows refused with their
// line. 적용 sends the same file with the version the preview was made
// against, so what applies is what was shown; an earlier version is put
// back from the list. A ZIP of photos, the teachers, and the school's tables
// (학교 설정: reasons, days off, 봉사 sittings, rules) are previewed and applied
// the same way.
// Names are shown, never kept: nothing here is stored on the device.
// Served as /assets/roster.js.
'use strict';
(() => {
  const G = window.Guidance;
  const $ = (id) => document.getElementById(id);
  if (!$('roster-file')) return;
  const schoolURL = '/v1/schools/' + encodeURIComponent(document.body.dataset.school);
  const rosterURL = schoolURL + '/roster';
  // The file previewed and the version it was previewed against; the version in service and
  // the newest (a 진급 version waits for its day: newer than the one in service).
  let previewed = null;
  let current = 0;
  let latest = 0;
  // Versions waiting for their day (진급), oldest first.
  let waiting = [];
  // A roll-over's students who still owe 교내봉사, each with its 종결 box and the id its closing is
  // sent with (a retry counts once); and the school's today, the day a closing is recorded on.
  let owed = [];
  let owedToday = '';

  const tableNames = { reasons: '사유', calendar: '학사 일정', 'service-slots': '봉사 일정', rules: '규칙' };
  const seat = (s) => s.grade + '학년 ' + s.class + '반 ' + s.number + '번';
  // A teacher's name from the access record's teacher filter, else the id.
  function teacherName(id) {
    const option = [...$('access-teacher').options].find((o) => o.value === id);
    return option ? option.textContent : id;
  }

  async function loadVersions() {
    let answer;
    try {
      answer = await G.api('GET', rosterURL);
    } catch (error) {
      G.say('roster-status', G.message(error), 'warn');
      return;
    }
    current = answer.version;
    latest = answer.latest;
    waiting = answer.versions.filter((v) => v.pending).reverse();
    $('roster-current').textContent = (answer.version ? '지금 명부: 버전 ' + answer.version : '지금 명부: 처음 등록된 명부')
      + ' · 학생 ' + answer.students + '명'
      + waiting.map((v) => ' · ' + G.day(v.effective) + '부터 버전 ' + v.version + ' (진급)').join('');
    $('roster-versions').replaceChildren(...answer.versions.map((v) => G.el('li', { class: 'entry' },
      G.el('div', { class: 'entry-text' },
        G.el('p', { class: 'entry-head' }, G.el('strong', {}, '버전 ' + v.version), ' ',
          G.el('span', { class: 'meta' }, '학생 ' + v.students + '명' + (v.effective ? ' · ' + G.day(v.effective) + ' 적용' : '') + (v.teachers ? ' · 교사 명단' : '')
            + (v.tables || []).map((t) => ' · ' + tableNames[t]).join('') + (v.restores ? ' · 버전 ' + v.restores + ' 되돌림' : ''))),
        G.el('p', { class: 'meta' }, teacherName(v.madeBy) + ' · ' + G.day(G.today(v.madeAt)) + ' ' + G.clock(v.madeAt))),
      v.version === current ? G.el('span', { class: 'tag' }, '지금')
        : v.pending ? G.el('span', { class: 'tag' }, G.day(v.effective) + '부터')
        : G.el('button', { type: 'button', class: 'secondary', onclick: () => restore(v.version) }, '이 버전으로 되돌리기'))));
    $('roster-versions-empty').hidden = answer.versions.length > 0;
  }

  // One list of the preview: its title with the count (of students, or `unit`), then a line each.
  function part(title, items, line, unit = '명') {
    if (!items.length) return null;
    return G.el('section', { class: 'roster-part' },
      G.el('h4', {}, title + ' ' + items.length + unit),
      G.el('ul', { class: 'plain' }, ...items.map((item) => G.el('li', {}, line(item)))));
  }

  // A preview of `kind` (roster, teachers, tables: its elements' prefix) shown: `head`, then its
  // `parts`; 적용 offered with `ready` said, unless there is a `problem`, which is said instead.
  function shown(kind, head, parts, problem, ready) {
    $(kind + '-preview').replaceChildren(...(head ? [G.el('p', { class: 'meta' }, head)] : []), ...parts);
    $(kind + '-apply').hidden = Boolean(problem);
    if (problem) G.say(kind + '-status', problem, 'warn');
    else G.say(kind + '-status', ready);
  }

  // The chosen file sent to `url` for its preview: its bytes and the answer, or null
  // (said in `status`, the preview `shown` emptied) when there is no file or no answer.
  async function send(input, status, shown, url, missing, working) {
    const file = $(input).files[0];
    if (!file) {
      G.say(status, missing, 'warn');
      $(input).focus();
      return null;
    }
    G.say(status, working);
    const bytes = await file.arrayBuffer();
    try {
      return { bytes, answer: await G.api('POST', url, bytes) };
    } catch (error) {
      $(shown).replaceChildren();
      G.say(status, error.problem && error.status === 422 ? error.problem.detail : G.message(error), 'warn');
      return null;
    }
  }

  async function preview() {
    $('roster-apply').hidden = true;
    previewed = null;
    owed = [];
    const sent = await send('roster-file', 'roster-status', 'roster-preview', rosterURL + '/students/preview', '먼저 파일을 고르세요.',
      '미리 보는 중…');
    if (!sent) return;
    const { bytes, answer } = sent;
    previewed = { bytes, basedOn: answer.basedOn };
    const refused = part('받지 못한 줄', answer.refused, (r) => r.line + '번째 줄: ' + r.reason, '개');
    // 진급: those leaving from the top grade are graduates, the others leave (전출 and the like).
    const rollOver = Boolean($('roster-effective').value);
    const graduates = new Set(rollOver ? answer.graduates.map((s) => s.studentId) : []);
    // 교내봉사 still owed goes with each student into the new year (it is theirs, not their seat's).
    let owing = [];
    if (rollOver) {
      try {
        const list = await G.api('GET', schoolURL + '/service?owing=true');
        owing = list.items.filter((item) => item.outstanding > 0 && !graduates.has(item.student.studentId));
        owedToday = list.today;
      } catch (error) {
        owing = [];
      }
    }
    // A change applied now is replaced on a waiting roll-over's day: said before it is applied.
    const replaced = rollOver ? [] : waiting.map((v) => G.el('p', { class: 'status warn' },
      G.day(v.effective) + '부터 버전 ' + v.version + '(진급)이 적용됩니다. 지금 적용하는 명부는 그날 그 명부로 바뀌니, 필요하면 진급 명부에도 반영하세요.'));
    const parts = [
      ...replaced,
      rollOver && answer.promoted ? G.el('p', { class: 'meta' }, '진급 ' + answer.promoted + '명') : null,
      owingChoice(owing),
      part('새 학생', answer.added, (s) => s.name + ' · ' + seat(s)),
      part('졸업하는 학생', answer.left.filter((s) => graduates.has(s.studentId)), (s) => s.name + ' · ' + seat(s)),
      part('명부에서 빠지는 학생', answer.left.filter((s) => !graduates.has(s.studentId)), (s) => s.name + ' · ' + seat(s)),
      part('자리가 바뀌는 학생', answer.moved, (c) => c.after.name + ' · ' + seat(c.before) + ' → ' + seat(c.after)),
      part('이름이 바뀌는 학생', answer.renamed, (c) => c.before.name + ' → ' + c.after.name + ' · ' + seat(c.after)),
      refused,
    ].filter(Boolean);
    shown('roster', '적용하면 학생 ' + answer.students + '명' + (parts.length ? '' : ' · 바뀌는 것이 없습니다'), parts,
      answer.refused.length && '받지 못한 줄을 고친 뒤 파일을 다시 고르세요. 그 전에는 적용할 수 없습니다.', '내용을 확인한 뒤 적용하세요.');
    $('roster-preview-title').focus();
  }

  // 적용 of what `kind` previewed (roster, teachers, tables: its elements' prefix): `body` sent
  // to `url`; `done(answer)` says what became of it. The preview is gone either way but on failure.
  async function applying(kind, url, body, done) {
    $(kind + '-apply').disabled = true;
    G.say(kind + '-status', '적용하는 중…');
    try {
      const answer = await G.api('POST', url, body);
      G.say(kind + '-status', done(answer), 'ok');
      $(kind + '-apply').hidden = true;
      $(kind + '-preview').replaceChildren();
      await loadVersions();
      return true;
    } catch (error) {
      G.say(kind + '-status', error.status === 409 ? '그 사이 다른 분이 명부를 바꿨습니다. 다시 미리 보세요.' : G.message(error), 'warn');
      return false;
    } finally {
      $(kind + '-apply').disabled = false;
    }
  }

  // 교내봉사 still owed at a roll-over: carried into the new year unless closed (종결) with a reason,
  // per student or all at once; recorded when the roll-over is applied.
  function owingChoice(items) {
    owed = items.map((item) => ({ item, box: G.el('input', { type: 'checkbox', id: 'owing-' + item.student.studentId }), serviceId: G.uuid() }));
    if (!owed.length) return null;
    const all = G.el('input', { type: 'checkbox', id: 'owing-all' });
    all.addEventListener('change', () => owed.forEach((o) => { o.box.checked = all.checked; }));
    for (const o of owed) o.box.addEventListener('change', () => { all.checked = owed.every((x) => x.box.checked); });
    return G.el('section', { class: 'roster-part' },
      G.el('h4', {}, '교내봉사가 남은 학생 ' + owed.length + '명'),
      G.el('p', { class: 'meta' }, '고르지 않은 학생의 봉사는 새 학년에도 이어집니다. 종결할 학생을 고르고 사유를 쓰면, 적용할 때 종결이 기록됩니다.'),
      G.el('p', { class: 'choice' }, all, G.el('label', { for: 'owing-all' }, '모두 종결')),
      G.el('ul', { class: 'plain' }, ...owed.map((o) => G.el('li', { class: 'choice' }, o.box,
        G.el('label', { for: o.box.id }, o.item.student.name + ' · ' + o.item.outstanding + '회 남음 · 종결')))),
      G.el('p', {}, G.el('label', { for: 'owing-reason' }, '종결 사유'), ' ',
        G.el('input', { type: 'text', id: 'owing-reason', maxlength: '200', autocomplete: 'off' })));
  }

  // The chosen students' owed 교내봉사 closed with `note`; what became of it, said after `applied`.
  async function closeOwed(chosen, note, applied) {
    const failed = [];
    for (const o of chosen) {
      const s = o.item.student;
      try {
        await G.api('POST', schoolURL + '/grades/' + s.grade + '/students/' + encodeURIComponent(s.studentId) + '/service',
          { serviceId: o.serviceId, date: owedToday, sessions: Math.min(o.item.outstanding, 20), outcome: 'closed', note });
      } catch (error) {
        failed.push(s.name);
      }
    }
    G.say('roster-status', applied + ' · 교내봉사 종결 ' + (chosen.length - failed.length) + '명'
      + (failed.length ? ' · 종결하지 못한 학생 ' + failed.join(', ') + ': 봉사 명단의 남은 봉사 종결로 다시 하세요.' : ''),
    failed.length ? 'warn' : 'ok');
  }

  async function apply() {
    if (!previewed) return;
    const chosen = owed.filter((o) => o.box.checked);
    const note = chosen.length ? $('owing-reason').value.trim() : '';
    if (chosen.length && !note) {
      G.say('roster-status', '교내봉사를 종결할 사유를 쓰세요.', 'warn');
      $('owing-reason').focus();
      return;
    }
    const effective = $('roster-effective').value;
    if (await applying('roster', rosterURL + '/students?basedOn=' + previewed.basedOn + (effective ? '&effective=' + effective : ''),
      previewed.bytes, (answer) => '버전 ' + answer.version + (answer.effective ? ' 저장 · ' + G.day(answer.effective) + '부터 적용됩니다'
        : ' 적용 완료') + ' · 학생 ' + answer.students + '명')) {
      previewed = null;
      owed = [];
      $('roster-file').value = '';
      if (chosen.length) await closeOwed(chosen, note, $('roster-status').textContent);
    }
  }

  async function restore(version) {
    if (!await G.ask('버전 ' + version + '의 학생으로 되돌릴까요? 새 버전으로 적용됩니다.', '되돌리기', '취소')) return;
    try {
      const answer = await G.api('POST', rosterURL + '/versions/' + version + '/restore?basedOn=' + latest);
      G.say('roster-status', '버전 ' + version + ' 되돌림 · 버전 ' + answer.version + ' 적용 완료', 'ok');
    } catch (error) {
      G.say('roster-status', error.status === 409 ? '그 사이 다른 분이 명부를 바꿨습니다. 다시 시도하세요.' : G.message(error), 'warn');
    }
    await loadVersions();
  }

  // --- 교사: a file of the school's teachers previewed (new, leaving, changed, refused), then applied. ---
  let teachersPreviewed = null;
  const roleNames = { homeroom: '담임', volunteer_duty: '봉사 담당', gate: '교문 지도', admin: '관리' };
  const duty = (t) => t.roles.split('+').map((r) => roleNames[r] || r).join('·')
    + (t.grade ? ' ' + t.grade + '학년' : '') + (t.class ? ' ' + t.class + '반' : '');

  async function previewTeachers() {
    $('teachers-apply').hidden = true;
    teachersPreviewed = null;
    const sent = await send('teachers-file', 'teachers-status', 'teachers-preview', rosterURL + '/teachers/preview',
      '먼저 파일을 고르세요.', '미리 보는 중…');
    if (!sent) return;
    const { bytes, answer } = sent;
    teachersPreviewed = { bytes, basedOn: answer.basedOn };
    const parts = [
      part('새 교사', answer.added, (t) => t.name + ' · ' + duty(t), '명'),
      part('명단에서 빠지는 교사', answer.left, (t) => t.name + ' · ' + duty(t) + ' (더 로그인할 수 없습니다)', '명'),
      part('바뀌는 교사', answer.changed, (c) => c.after.name + ' · ' + duty(c.before) + ' → ' + duty(c.after)
        + (c.before.email !== c.after.email ? ' · 이메일 ' + (c.after.email || '없음') : ''), '명'),
      part('받지 못한 줄', answer.refused, (r) => r.line + '번째 줄: ' + r.reason, '개'),
    ].filter(Boolean);
    shown('teachers', '적용하면 교사 ' + answer.teachers + '명' + (parts.length ? '' : ' · 바뀌는 것이 없습니다'), parts,
      answer.problem || (answer.refused.length && '받지 못한 줄을 고친 뒤 파일을 다시 고르세요. 그 전에는 적용할 수 없습니다.'),
      '내용을 확인한 뒤 교사를 적용하세요.');
    $('teachers-preview').focus();
  }

  async function applyTeachers() {
    if (!teachersPreviewed) return;
    if (await applying('teachers', rosterURL + '/teachers?basedOn=' + teachersPreviewed.basedOn, teachersPreviewed.bytes,
      (answer) => '버전 ' + answer.version + ' 적용 완료 · 교사 명단이 바뀌었습니다')) {
      teachersPreviewed = null;
      $('teachers-file').value = '';
    }
  }

  $('teachers-preview-button').addEventListener('click', previewTeachers);
  $('teachers-file').addEventListener('change', () => { teachersPreviewed = null; $('teachers-apply').hidden = true; });
  $('teachers-apply').addEventListener('click', applyTeachers);

  // --- 학생 사진: a ZIP previewed (whose each file is, what is refused, who still has none), then applied. ---
  let photosPreviewed = null;

  async function previewPhotos() {
    $('photos-apply').hidden = true;
    photosPreviewed = null;
    const sent = await send('photos-file', 'photos-status', 'photos-preview', rosterURL + '/photos/preview', '먼저 ZIP 파일을 고르세요.',
      '사진을 살펴보는 중… 사진이 많으면 잠시 걸립니다.');
    if (!sent) return;
    const { bytes, answer } = sent;
    photosPreviewed = bytes;
    $('photos-preview').replaceChildren(...[
      G.el('p', { class: 'meta' }, '학생 ' + answer.matched.length + '명의 사진'),
      part('받지 못한 파일', answer.refused, (r) => r.file + ': ' + r.reason, '개'),
      part('사진이 없는 학생', answer.withoutPhoto, (s) => s.name + ' · ' + seat(s)),
    ].filter(Boolean));
    $('photos-apply').hidden = answer.matched.length === 0;
    G.say('photos-status', answer.matched.length ? '내용을 확인한 뒤 사진을 적용하세요.' : '학생과 맞는 사진이 없습니다. 파일 이름을 확인하세요.',
      answer.matched.length ? '' : 'warn');
    $('photos-preview').focus();
  }

  async function applyPhotos() {
    if (!photosPreviewed) return;
    $('photos-apply').disabled = true;
    G.say('photos-status', '사진을 적용하는 중…');
    try {
      const answer = await G.api('POST', rosterURL + '/photos', photosPreviewed);
      G.say('photos-status', '사진 ' + answer.matched.length + '장 적용 완료', 'ok');
      photosPreviewed = null;
      $('photos-apply').hidden = true;
      $('photos-file').value = '';
    } catch (error) {
      G.say('photos-status', G.message(error), 'warn');
    } finally {
      $('photos-apply').disabled = false;
    }
  }

  // --- 학교 설정: a table (reasons, days off, 봉사 sittings, rules) edited as text, previewed, then applied. ---
  let tablePreviewed = null;
  const tableHelp = {
    reasons: 'code(영문 코드), label(보이는 이름), requires_detail(상세 필요: true/false), service_sessions(봉사 횟수). 기본 사유는 그대로 두고 학교의 사유만 씁니다.',
    calendar: 'date(YYYY-MM-DD), end_date(마지막 쉬는 날, 하루면 비움), name(이름). 봉사 기한은 쉬는 날을 건너뜁니다.',
    'service-slots': 'weekday(mon~fri), time(HH:MM), place(장소), capacity(정원).',
    rules: 'reason(사유 코드, *는 모든 사유), count(횟수), days(기간 일수), notify(homeroom, volunteer_duty, admin을 +로), label(이름), urgent(방해 금지 시간에도 알림: true/false).',
  };
  const tableURL = () => rosterURL + '/tables/' + $('tables-which').value;

  async function loadTable() {
    tablePreviewed = null;
    $('tables-apply').hidden = true;
    $('tables-preview').replaceChildren();
    $('tables-help').textContent = tableHelp[$('tables-which').value];
    try {
      $('tables-text').value = (await G.api('GET', tableURL())).text;
      G.say('tables-status', '');
    } catch (error) {
      G.say('tables-status', G.message(error), 'warn');
    }
  }

  async function previewTable() {
    $('tables-apply').hidden = true;
    const text = $('tables-text').value;
    G.say('tables-status', '미리 보는 중…');
    let answer;
    try {
      answer = await G.api('POST', tableURL() + '/preview', new Blob([text]));
    } catch (error) {
      G.say('tables-status', G.message(error), 'warn');
      return;
    }
    tablePreviewed = { text, basedOn: answer.basedOn, url: tableURL() };
    const parts = [
      part('더해지는 줄', answer.added || [], (row) => row, '개'),
      part('빠지는 줄', answer.removed || [], (row) => row, '개'),
      part('받지 못한 줄', answer.refused, (r) => r.line + '번째 줄: ' + r.reason, '개'),
    ].filter(Boolean);
    if (answer.refused.length) tablePreviewed = null;
    shown('tables', answer.refused.length ? '' : '적용하면 ' + answer.rows + '줄' + (parts.length ? '' : ' · 바뀌는 것이 없습니다'), parts,
      answer.refused.length && '받지 못한 줄을 고친 뒤 다시 미리 보세요. 그 전에는 적용할 수 없습니다.', '내용을 확인한 뒤 설정을 적용하세요.');
    $('tables-preview').focus();
  }

  async function applyTable() {
    if (!tablePreviewed) return;
    if (await applying('tables', tablePreviewed.url + '?basedOn=' + tablePreviewed.basedOn, new Blob([tablePreviewed.text]),
      (answer) => '버전 ' + answer.version + ' 적용 완료 · 설정이 바뀌었습니다')) {
      tablePreviewed = null;
    }
  }

  $('tables-which').addEventListener('change', loadTable);
  $('tables-text').addEventListener('input', () => { tablePreviewed = null; $('tables-apply').hidden = true; });
  $('tables-preview-button').addEventListener('click', previewTable);
  $('tables-apply').addEventListener('click', applyTable);

  $('photos-preview-button').addEventListener('click', previewPhotos);
  $('photos-file').addEventListener('change', () => { photosPreviewed = null; $('photos-apply').hidden = true; });
  $('photos-apply').addEventListener('click', applyPhotos);
  $('roster-preview-button').addEventListener('click', preview);
  $('roster-file').addEventListener('change', () => { previewed = null; $('roster-apply').hidden = true; });
  $('roster-effective').addEventListener('change', () => { if (previewed) preview(); });
  $('roster-apply').addEventListener('click', apply);
  const loadAll = () => { loadVersions(); loadTable(); };
  G.whenShown('panel-admin', loadAll);
  if (!$('panel-admin').hidden) loadAll();
})();
