// 현황: how a week or a month went for what the teacher may see (GET
// …/overview): the first screen says "how was this week" (the total against
// the same days before, the last four weeks by school day as a chart); then
// by reason, by grade or class, by hour and the students with the most, each
// a table whose bars are drawn from its own numbers; the period's records as
// CSV. Read when the tab is shown. Served as /assets/overview.js.
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

  // "3건 많음" / "2건 적음" / "같음" against the period before.
  function change(count, previous) {
    if (count === previous) return '같음';
    return Math.abs(count - previous) + '건 ' + (count > previous ? '많음' : '적음');
  }

  // The four weeks by school day: a bar per day, the period's days in the accent colour;
  // the same numbers in a table a screen reader (and paper) reads.
  function weeks(overview) {
    const max = Math.max(1, ...overview.days.map((d) => d.count));
    const width = 320;
    const height = 120;
    const step = width / overview.days.length;
    const bars = overview.days.map((d, i) => {
      const h = Math.round((d.count / max) * (height - 20));
      const inPeriod = d.date >= overview.from && d.date <= overview.to;
      return svg('rect', { x: (i * step + 2).toFixed(1), y: height - 16 - h, width: (step - 4).toFixed(1), height: Math.max(h, 1),
        class: inPeriod ? 'bar now' : 'bar' });
    });
    // A label under each week's Monday.
    const labels = overview.days.filter((d) => new Date(d.date + 'T12:00:00Z').getUTCDay() === 1).map((d) => svg('text',
      { x: (overview.days.indexOf(d) * step + 2).toFixed(1), y: height - 2, class: 'axis' }, G.day(d.date).replace(/\(.\)$/, '')));
    const chart = svg('svg', { viewBox: '0 0 ' + width + ' ' + height, class: 'chart', 'aria-hidden': 'true', focusable: 'false' },
      ...bars, ...labels);
    const table = G.el('table', { class: 'visually-hidden' }, G.el('caption', {}, '최근 4주 등교일의 지도 건수'),
      G.el('thead', {}, G.el('tr', {}, G.el('th', { scope: 'col' }, '날짜'), G.el('th', { scope: 'col' }, '건수'))),
      G.el('tbody', {}, ...overview.days.map((d) => G.el('tr', {}, G.el('td', {}, G.day(d.date)), G.el('td', {}, d.count + '건')))));
    return G.el('figure', { class: 'weeks' }, G.el('figcaption', { class: 'meta' }, '최근 4주, 등교일 (이 기간은 진한 막대)'), chart, table);
  }

  // A figure as a table: label, a bar drawn from the count, the count and the period before.
  function figures(title, items, before) {
    if (!items.length) return [];
    const max = Math.max(1, ...items.map((f) => Math.max(f.count, f.previous)));
    const bar = (f) => svg('svg', { viewBox: '0 0 100 10', preserveAspectRatio: 'none', class: 'hbar', 'aria-hidden': 'true', focusable: 'false' },
      svg('rect', { x: 0, y: 0, width: Math.max(1, Math.round((f.count / max) * 100)), height: 10, class: 'bar now' }));
    const head = G.el('tr', {}, G.el('th', { scope: 'col' }, '구분'), G.el('th', { scope: 'col' }, G.el('span', { class: 'visually-hidden' }, '막대')),
      G.el('th', { scope: 'col' }, '건수'), G.el('th', { scope: 'col' }, before));
    const rows = items.map((f) => G.el('tr', {}, G.el('th', { scope: 'row' }, f.label), G.el('td', { class: 'bar-cell' }, bar(f)),
      G.el('td', {}, f.count + '건'), G.el('td', { class: 'meta' }, f.previous + '건')));
    return [G.el('h3', { class: 'section' }, title),
      G.el('table', { class: 'figures' }, G.el('caption', { class: 'visually-hidden' }, title + ': 건수와 ' + before),
        G.el('thead', {}, head), G.el('tbody', {}, ...rows))];
  }

  function render(overview) {
    const [now, before] = names[asked().kind];
    const label = asked().last ? before : now;
    const scope = overview.scope.classNumber ? overview.scope.grade + '학년 ' + overview.scope.classNumber + '반'
      : overview.scope.grade ? overview.scope.grade + '학년' : '학교 전체';
    $('overview-scope').textContent = scope;
    const beforeName = (asked().last ? '그 전' : names[overview.period][1]) + ' 같은 기간';
    const body = [
      G.el('p', { class: 'headline' }, G.el('strong', {}, label + ' 지도 ' + overview.total + '건'), ' ',
        G.el('span', {}, beforeName + '(' + overview.previousTotal + '건)보다 ' + change(overview.total, overview.previousTotal))),
      G.el('p', { class: 'meta' }, G.day(overview.from) + ' – ' + G.day(overview.to)),
      weeks(overview),
      ...figures('사유별', overview.reasons, beforeName),
      ...figures(overview.scope.grade ? '반별' : '학년별', overview.groups, beforeName),
      ...figures('시간대별', overview.hours, beforeName)];
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
      '이 기간 기록 CSV로 저장')));
    $('overview-body').replaceChildren(...body);
  }

  async function load() {
    const { kind, date } = asked();
    const query = 'period=' + kind + '&date=' + date;
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

  for (const input of document.querySelectorAll('input[name=period]')) input.addEventListener('change', load);
  G.whenShown('panel-overview', load);
})();
