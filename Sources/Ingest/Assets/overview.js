// 현황: how a week or a month went for what the teacher may see (GET
// …/overview): the first screen says "how was this week" (the total against
// the same days before, the last four weeks by school day as a chart with
// its values, today hollow); then by reason, by grade or class, by hour and
// the students with the most, each a table whose bars are drawn from its own
// numbers, with the period before and the change (▲ 12 (+80%)); whether
// what the school does works (교내봉사, cases, repeats after 봉사); a grade or
// class opens its own 현황 (school → grade → class, as far as the teacher may
// read); the period's records as CSV. Read when the tab is shown. Served as
// /assets/overview.js.
'use strict';
(() => {
  const G = window.Guidance;
  const $ = (id) => document.getElementById(id);
  if (!$('overview-body')) return;
  const schoolURL = '/v1/schools/' + encodeURIComponent(document.body.dataset.school);

  const SVG = 'http://www.w3.org/2000/svg';
  function svg(tag, attributes, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
    node.append(...children);
    return node;
  }

  // The period chosen (week, last-week, month, last-month) as the API asks it: a day of it.
  function asked() {
    const value = document.querySelector('input[name=period]:checked').value;
    const last = value.startsWith('last-');
    const kind = last ? value.slice('last-'.length) : value;
    const day = new Date(G.today() + 'T12:00:00Z');
    if (last && kind === 'week') day.setUTCDate(day.getUTCDate() - 7);
    if (last && kind === 'month') day.setUTCDate(0);
    return { kind, last, date: day.toISOString().slice(0, 10) };
  }

  const names = { week: ['이번 주', '지난 주'], month: ['이번 달', '지난 달'] };

  // Where the teacher has drilled down to: a grade of the school, a class of
  // the grade (null: the widest the teacher may see, which the API chooses).
  const drill = { grade: null, classNumber: null };
  // The widest scope, as the API gave it undrilled: the school for an
  // admin, the grade for a volunteer-duty teacher (who goes no higher).
  let widest = null;

  // "3건 많음" / "2건 적음" / "같음" against the period before.
  function change(count, previous) {
    if (count === previous) return '같음';
    return Math.abs(count - previous) + '건 ' + (count > previous ? '많음' : '적음');
  }

  // A row's change, said plainly: "▲ 12 (+80%)", "▼ 3 (-50%)", "-" when the same; "▲ 4 (새로)" from none.
  function delta(count, previous) {
    if (count === previous) return '-';
    const arrow = (count > previous ? '▲ ' : '▼ ') + Math.abs(count - previous);
    if (!previous) return arrow + ' (새로)';
    const percent = Math.round(((count - previous) / previous) * 100);
    return arrow + ' (' + (percent > 0 ? '+' : '') + percent + '%)';
  }

  // The four weeks by school day: a bar per day, the period's days in the accent colour;
  // the same numbers in a table a screen reader (and paper) reads.
  // Drawn in units about a pixel wide on a phone (the card is about 300 px),
  // so the day labels and the values on the bars read at 12 px or more.
  // Today is not over: its bar is drawn hollow and says so.
  function weeks(overview) {
    const max = Math.max(1, ...overview.days.map((d) => d.count));
    const width = 300;
    const height = 150;
    const step = width / overview.days.length;
    const today = G.today();
    const base = height - 20;
    const bars = overview.days.flatMap((d, i) => {
      const h = Math.round((d.count / max) * (base - 18));
      const inPeriod = d.date >= overview.from && d.date <= overview.to;
      const x = i * step + 1.5;
      const bar = svg('rect', { x: x.toFixed(1), y: base - h, width: (step - 3).toFixed(1), height: Math.max(h, 1),
        class: 'bar' + (inPeriod ? ' now' : '') + (d.date === today ? ' today' : '') });
      const value = d.count ? [svg('text', { x: (x + (step - 3) / 2).toFixed(1), y: base - h - 3, class: 'value' }, String(d.count))] : [];
      return [bar, ...value];
    });
    // A label under each week's Monday.
    const labels = overview.days.filter((d) => new Date(d.date + 'T12:00:00Z').getUTCDay() === 1).map((d) => svg('text',
      { x: (overview.days.indexOf(d) * step + 1.5).toFixed(1), y: height - 4, class: 'axis' }, G.day(d.date).replace(/\(.\)$/, '')));
    const chart = svg('svg', { viewBox: '0 0 ' + width + ' ' + height, class: 'chart', 'aria-hidden': 'true', focusable: 'false' },
      ...bars, ...labels);
    const unfinished = overview.days.some((d) => d.date === today);
    const table = G.el('table', { class: 'visually-hidden' }, G.el('caption', {}, '최근 4주 등교일의 지도 건수'),
      G.el('thead', {}, G.el('tr', {}, G.el('th', { scope: 'col' }, '날짜'), G.el('th', { scope: 'col' }, '건수'))),
      G.el('tbody', {}, ...overview.days.map((d) => G.el('tr', {}, G.el('td', {}, G.day(d.date) + (d.date === today ? ' (진행 중)' : '')),
        G.el('td', {}, d.count + '건')))));
    return G.el('figure', { class: 'weeks' }, G.el('figcaption', { class: 'meta' },
      '최근 4주, 등교일 (이 기간은 진한 막대' + (unfinished ? ', 오늘은 진행 중이라 빈 막대' : '') + ')'), chart, table);
  }

  // A figure as a table: label, a bar drawn from the count, the count, the
  // period before and the change. `open`: a row's label opens that group
  // (a grade, a class) in 현황. A change is coloured worse or better: more
  // is worse, but for the keys in `rising` (봉사 served, cases closed).
  function figures(title, items, before, open, unit = '건', rising = []) {
    if (!items.length) return [];
    const max = Math.max(1, ...items.map((f) => Math.max(f.count, f.previous)));
    const bar = (f) => svg('svg', { viewBox: '0 0 100 10', preserveAspectRatio: 'none', class: 'hbar', 'aria-hidden': 'true', focusable: 'false' },
      svg('rect', { x: 0, y: 0, width: Math.max(1, Math.round((f.count / max) * 100)), height: 10, class: 'bar now' }));
    const counted = { 건: '건수', 회: '횟수', 명: '인원' }[unit];
    // Four columns fit a phone: the bar under the row's label.
    const head = G.el('tr', {}, G.el('th', { scope: 'col' }, '구분'),
      G.el('th', { scope: 'col' }, counted), G.el('th', { scope: 'col' }, before.replace(' 같은 기간', '')), G.el('th', { scope: 'col' }, '변화'));
    const worse = (f) => (rising.includes(f.key) ? f.count < f.previous : f.count > f.previous);
    const better = (f) => f.count !== f.previous && !worse(f);
    const rows = items.map((f) => G.el('tr', { 'data-key': f.key },
      G.el('th', { scope: 'row', class: 'bar-cell' },
        open ? G.el('button', { type: 'button', class: 'link record-link drill', onclick: () => open(f) }, f.label) : f.label, bar(f)),
      G.el('td', {}, f.count + unit), G.el('td', { class: 'meta' }, f.previous + unit),
      G.el('td', { class: 'delta' + (worse(f) ? ' worse' : better(f) ? ' better' : '') }, delta(f.count, f.previous))));
    return [G.el('h3', { class: 'section' }, title),
      G.el('table', { class: 'figures' }, G.el('caption', { class: 'visually-hidden' }, title + ': ' + counted + ', ' + before + ', 변화'),
        G.el('thead', {}, head), G.el('tbody', {}, ...rows))];
  }

  // The classes and reasons that rose most against their own four weeks
  // before, named at the top: "2학년 4반 실내화 없음 ▲ 9 (4주 평균 2건 → 11건)";
  // each opens its class (unless that is the scope shown).
  function rises(overview, plain) {
    if (!overview.rises.length) return null;
    const average = (n) => (Number.isInteger(n) ? n : n.toFixed(1)) + '건';
    return G.el('div', { class: 'rises' }, G.el('h3', { class: 'section' }, '눈에 띄게 늘어난 곳'),
      G.el('ul', { class: 'plain' }, ...overview.rises.map((r) => {
        const place = r.grade + '학년 ' + r.classNumber + '반';
        const words = ' ' + r.reason.label + ' ▲ ' + Math.round(r.count - r.average) + ' (4주 평균 ' + average(r.average) + ' → ' + r.count + '건)';
        return G.el('li', { class: 'rise' }, plain || overview.scope.classNumber ? G.el('strong', {}, place)
          : G.el('button', { type: 'button', class: 'link record-link drill', onclick: () => {
            Object.assign(drill, { grade: r.grade, classNumber: r.classNumber });
            load(true);
          } }, place), words);
      })));
  }

  // Whether what the school does works: 교내봉사 in sessions, cases, and the
  // students recorded again within 30 days after they served, with the rate.
  function working(overview, before) {
    const w = overview.working;
    const served = w.repeats.find((f) => f.key === 'served');
    const again = w.repeats.find((f) => f.key === 'again');
    const rate = (n, of) => (of ? Math.round((n / of) * 100) + '% (' + of + '명 중 ' + n + '명)' : '봉사한 학생 없음');
    return [G.el('h3', { class: 'section', id: 'working-title' }, '지도의 효과'),
      ...figures('교내봉사', w.service, before, null, '회', ['served', 'on-time']),
      ...figures('사례', w.cases, before, null, '건', ['closed']),
      ...figures('봉사 뒤 다시 기록', w.repeats, before, null, '명'),
      G.el('p', { class: 'rate', id: 'repeat-rate' }, '봉사 뒤 30일 안에 다시 기록된 비율 ',
        G.el('strong', {}, rate(again.count, served.count)), G.el('span', { class: 'meta' }, ' · ' + before + ' ' + rate(again.previous, served.previous)))];
  }

  // Down a level (school → grade → class), as far as the teacher may read.
  function openGroup(overview) {
    if (overview.scope.classNumber) return null;
    return (f) => {
      if (overview.scope.grade) Object.assign(drill, { grade: overview.scope.grade, classNumber: Number(f.key) });
      else Object.assign(drill, { grade: Number(f.key), classNumber: null });
      load(true);
    };
  }

  function render(overview) {
    const [now, before] = names[asked().kind];
    const label = asked().last ? before : now;
    $('overview-scope').textContent = scopeName(overview);
    const beforeName = (asked().last ? '그 전' : names[overview.period][1]) + ' 같은 기간';
    // Back up a level, when the teacher came down to this one (a grade
    // teacher's grade is their widest: undrilled).
    if (drill.grade === null) widest = overview.scope;
    const fromSchool = !widest || widest.grade === null;
    const up = drill.grade === null ? null : drill.classNumber !== null
      ? { label: drill.grade + '학년으로', to: fromSchool ? { grade: drill.grade, classNumber: null } : { grade: null, classNumber: null } }
      : { label: '학교 전체로', to: { grade: null, classNumber: null } };
    const main = [
      up ? G.el('div', { class: 'actions' }, G.el('button', { type: 'button', class: 'secondary', id: 'overview-up',
        onclick: () => { Object.assign(drill, up.to); load(true); } }, '← ' + up.label)) : null,
      G.el('p', { class: 'headline' }, G.el('strong', {}, label + ' 지도 ' + overview.total + '건'), ' ',
        G.el('span', {}, beforeName + '(' + overview.previousTotal + '건)보다 ' + change(overview.total, overview.previousTotal))),
      G.el('p', { class: 'meta' }, G.day(overview.from) + ' – ' + G.day(overview.to)),
      weeks(overview),
      rises(overview)].filter(Boolean);
    const more = [
      ...figures('사유별', overview.reasons, beforeName),
      ...figures(overview.scope.grade ? '반별' : '학년별', overview.groups, beforeName, openGroup(overview)),
      ...figures('시간대별', overview.hours, beforeName),
      ...working(overview, beforeName)];
    const body = [];
    if (overview.students.length) {
      body.push(G.el('h3', { class: 'section' }, '자주 지도받은 학생'),
        G.el('ol', { class: 'top' }, ...overview.students.map((s) => G.el('li', {}, G.el('div', { class: 'top-row' },
          G.Record && G.Record.may(s.student)
            ? G.el('button', { type: 'button', class: 'link record-link', 'aria-label': s.student.name + ' 학생 기록',
              onclick: (event) => G.Record.open(s.student, event.currentTarget) }, s.student.name)
            : G.el('span', {}, s.student.name),
          G.el('span', { class: 'meta' }, ' ' + s.student.grade + '학년 ' + s.student.classNumber + '반 ' + s.student.number + '번'),
          G.el('span', { class: 'count' }, s.count + '건'))))));
    }
    body.push(G.el('div', { class: 'actions' }, G.el('button', { type: 'button', class: 'secondary', onclick: () => save(overview) },
      '이 기간 기록 CSV로 저장'), G.el('button', { type: 'button', id: 'report-open', class: 'secondary', onclick: openReport },
      '월간 보고서 (' + Number(asked().date.slice(5, 7)) + '월)')));
    // Two columns on a desk: the week and its students beside the figures.
    $('overview-body').replaceChildren(G.el('div', { class: 'overview-main' }, ...main, ...body), G.el('div', { class: 'overview-more' }, ...more));
  }

  // The scope drilled to, as the API asks it ('' for the teacher's widest).
  const drilled = () => (drill.grade === null ? ''
    : '&grade=' + drill.grade + (drill.classNumber === null ? '' : '&classNumber=' + drill.classNumber));

  // --- 월간 보고서: the month holding the period shown, of the scope shown,
  // in place of 현황 to print on A4 (or save as CSV) for the 생활지도 위원회
  // and the 학교운영위원회. Student names only in an appendix the teacher adds.
  let report = null;

  async function openReport() {
    $('overview-card').hidden = true;
    $('report').hidden = false;
    $('report-body').replaceChildren();
    G.say('report-status', '불러오는 중…');
    $('report-title').focus();
    try {
      report = await G.api('GET', schoolURL + '/overview?period=month&date=' + asked().date + drilled());
    } catch (error) {
      G.say('report-status', '보고서를 불러오지 못했습니다. ' + G.message(error), 'warn');
      return;
    }
    G.say('report-status', '');
    renderReport();
  }

  function closeReport() {
    $('report').hidden = true;
    $('overview-card').hidden = false;
    report = null;
    ($('report-open') || $('overview-title')).focus();
  }

  const scopeName = (o) => (o.scope.classNumber ? o.scope.grade + '학년 ' + o.scope.classNumber + '반'
    : o.scope.grade ? o.scope.grade + '학년' : '학교 전체');

  function renderReport() {
    const o = report;
    const school = document.querySelector('.bar h1').textContent.trim();
    $('report-title').textContent = school + ' ' + Number(o.from.slice(0, 4)) + '년 ' + Number(o.from.slice(5, 7)) + '월 생활지도 보고서';
    $('report-meta').textContent = [G.day(o.from) + ' – ' + G.day(o.to), scopeName(o), '출력 ' + G.day(G.today())].join(' · ');
    const before = '지난 달 같은 기간';
    const body = [
      G.el('p', { class: 'headline' }, G.el('strong', {}, '지도 ' + o.total + '건'), ' ',
        G.el('span', {}, before + '(' + o.previousTotal + '건)보다 ' + change(o.total, o.previousTotal))),
      weeks(o),
      rises(o, true),
      ...figures('사유별', o.reasons, before),
      ...figures(o.scope.grade ? '반별' : '학년별', o.groups, before),
      ...figures('시간대별', o.hours, before),
      ...working(o, before)].filter(Boolean);
    if ($('report-names').checked && o.students.length) {
      body.push(G.el('h3', { class: 'section' }, '부록: 자주 지도받은 학생'),
        G.el('ol', { class: 'top' }, ...o.students.map((s) => G.el('li', {}, G.el('div', { class: 'top-row' },
          G.el('span', {}, s.student.name),
          G.el('span', { class: 'meta' }, ' ' + s.student.grade + '학년 ' + s.student.classNumber + '반 ' + s.student.number + '번'),
          G.el('span', { class: 'count' }, s.count + '건'))))));
    }
    $('report-body').replaceChildren(...body);
  }

  // The report's tables as one CSV (UTF-8 with a BOM, as Korean Excel opens it);
  // a cell that would start a formula is written as text.
  function saveReport() {
    const o = report;
    if (!o) return;
    const cell = (value) => {
      let text = String(value);
      if (/^[=+\-@\t\r]/.test(text) && text !== '-') text = "'" + text;
      return /[",\n\r]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
    };
    const rows = [['구분', '항목', '이번 달', '지난 달 같은 기간', '변화'], ['합계', '지도', o.total, o.previousTotal, delta(o.total, o.previousTotal)]];
    for (const [part, items] of [['사유', o.reasons], [o.scope.grade ? '반' : '학년', o.groups], ['시간대', o.hours]]) {
      for (const f of items) rows.push([part, f.label, f.count, f.previous, delta(f.count, f.previous)]);
    }
    for (const [part, items] of [['교내봉사(회)', o.working.service], ['사례(건)', o.working.cases], ['봉사 뒤 재기록(명)', o.working.repeats]]) {
      for (const f of items) rows.push([part, f.label, f.count, f.previous, delta(f.count, f.previous)]);
    }
    for (const r of o.rises) {
      rows.push(['늘어난 곳', r.grade + '학년 ' + r.classNumber + '반 ' + r.reason.label, r.count, '4주 평균 ' + r.average, '▲ ' + Math.round(r.count - r.average)]);
    }
    if ($('report-names').checked) {
      for (const s of o.students) rows.push(['학생', s.student.name + ' (' + s.student.grade + '-' + s.student.classNumber + '-' + s.student.number + ')', s.count, s.previous, '']);
    }
    G.saveFile(new Blob(['\ufeff' + rows.map((row) => row.map(cell).join(',')).join('\r\n') + '\r\n'], { type: 'text/csv;charset=utf-8' }),
      '월간보고서-' + o.from.slice(0, 7) + '.csv');
  }

  $('report-close').addEventListener('click', closeReport);
  $('report-print').addEventListener('click', () => window.print());
  $('report-csv').addEventListener('click', saveReport);
  $('report-names').addEventListener('change', () => { if (report) renderReport(); });
  for (const tab of document.querySelectorAll('[role=tab]')) tab.addEventListener('click', () => { if (!$('report').hidden) closeReport(); });

  // `moved`: after a drill up or down, focus goes to the title, which names the scope.
  async function load(moved) {
    const { kind, date } = asked();
    const query = 'period=' + kind + '&date=' + date + drilled();
    G.say('overview-status', '불러오는 중…');
    let overview;
    try {
      overview = await G.api('GET', schoolURL + '/overview?' + query);
    } catch (error) {
      G.say('overview-status', '현황을 불러오지 못했습니다. ' + G.message(error), 'warn');
      return;
    }
    G.say('overview-status', '');
    render(overview);
    if (moved === true) $('overview-title').focus();
  }

  // The period's records as the list API writes them for a spreadsheet.
  async function save(overview) {
    const scope = overview.scope.grade ? '&grade=' + overview.scope.grade + (overview.scope.classNumber ? '&classNumber=' + overview.scope.classNumber : '')
      : '&scope=school';
    try {
      await G.download(schoolURL + '/guidances?from=' + overview.from + '&to=' + overview.to + scope,
        '지도기록-' + overview.from + '-' + overview.to + '.csv');
    } catch (error) {
      G.say('overview-status', 'CSV로 저장하지 못했습니다. ' + G.message(error), 'warn');
    }
  }

  for (const input of document.querySelectorAll('input[name=period]')) input.addEventListener('change', () => load());
  G.whenShown('panel-overview', () => load());
})();
