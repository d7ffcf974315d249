import Web

extension GatePage {
    /// The gate page's behaviour. A registration carries a guidance id made
    /// here, kept until the server acknowledged it: a double tap, a retry
    /// after a timeout or a 503 sends the same id, so it is recorded once.
    static let script = Asset(name: "gate.js", contentType: "text/javascript; charset=utf-8", text: #"""
        'use strict';
        (() => {
          const G = window.Guidance;
          const $ = (id) => document.getElementById(id);
          const school = document.body.dataset.school;
          const base = '/v1/schools/' + encodeURIComponent(school);
          const form = $('register');
          const grade = $('grade');
          const klass = $('class');
          const number = $('number');
          const detail = $('detail');
          const submit = $('submit');
          let seats = [];      // [{grade, classes: [{classNumber, numbers}]}]
          let reasons = [];    // [{code, label, requiresDetail}]
          let student = null;  // the student the chosen seat shows
          let pending = null;  // {id, key}: a registration not yet acknowledged
          const storageKey = 'guidance.today.' + school;
          const retries = 4;

          function fill(select, values, label) {
            select.replaceChildren(G.el('option', { value: '' }, '선택'), ...values.map((v) => G.el('option', { value: v }, label(v))));
          }

          async function load() {
            renderToday();
            try {
              const [classes, catalogue] = await Promise.all([G.api('GET', base + '/classes'), G.api('GET', base + '/reasons')]);
              seats = classes.grades;
              reasons = catalogue.items;
            } catch (error) {
              G.say('register-status', '명부를 불러오지 못했습니다. ' + G.message(error), 'warn');
              return;
            }
            fill(grade, seats.map((g) => g.grade), (g) => g + '학년');
            $('reasons').replaceChildren(...reasons.map((r) =>
              G.el('label', {}, G.el('input', { type: 'radio', name: 'reason', value: r.code }), r.label)));
          }

          function chosenGrade() { return seats.find((g) => String(g.grade) === grade.value); }

          grade.addEventListener('change', () => {
            const entry = chosenGrade();
            fill(klass, entry ? entry.classes.map((c) => c.classNumber) : [], (c) => c + '반');
            fill(number, [], String);
            showStudent(null);
          });

          klass.addEventListener('change', () => {
            const entry = chosenGrade();
            const chosen = entry && entry.classes.find((c) => String(c.classNumber) === klass.value);
            fill(number, chosen ? chosen.numbers : [], (n) => n + '번');
            showStudent(null);
          });

          number.addEventListener('change', async () => {
            showStudent(null);
            G.say('student-error', '');
            if (!number.value) return;
            const seat = [grade.value, klass.value, number.value].join('/');
            try {
              const found = await G.api('GET', base + '/students/' + seat);
              if ([grade.value, klass.value, number.value].join('/') === seat) showStudent(found);
            } catch (error) {
              G.say('student-error', error.status === 404 ? '명부에 그 번호의 학생이 없습니다.' : G.message(error));
            }
          });

          // The name at once, with an initials avatar the photo replaces only
          // once it has loaded (no photo, or none reachable: the initials stay).
          function showStudent(found) {
            student = found;
            const box = $('student');
            if (!found) {
              box.replaceChildren();
              return;
            }
            const avatar = G.el('span', { class: 'avatar', 'aria-hidden': 'true' }, found.name.length > 2 ? found.name.slice(-2) : found.name);
            box.replaceChildren(avatar, G.el('div', {},
              G.el('div', { class: 'name', id: 'student-name' }, found.name),
              G.el('div', { class: 'meta' }, found.grade + '학년 ' + found.classNumber + '반 ' + found.number + '번')));
            if (found.photoUrl) {
              const photo = G.el('img', { class: 'avatar', alt: found.name + ' 사진', referrerpolicy: 'no-referrer' });
              photo.addEventListener('load', () => { if (student === found) avatar.replaceWith(photo); });
              photo.src = found.photoUrl;
            }
          }

          function chosenReason() {
            const input = form.querySelector('input[name=reason]:checked');
            return input ? reasons.find((r) => r.code === input.value) : null;
          }

          $('reasons').addEventListener('change', () => {
            const reason = chosenReason();
            $('detail-row').hidden = !(reason && reason.requiresDetail);
            G.say('reason-error', '');
          });

          const fieldMessages = {
            'reason.detail': '상세 내용을 1–200자로 적으세요(줄바꿈 같은 제어 문자는 쓸 수 없습니다).',
            'reason.code': '이 학교의 사유 목록에 없는 사유입니다. 페이지를 새로 고치세요.',
            'student': '명부에 없는 학생입니다. 학년, 반, 번호를 다시 고르세요.',
          };

          function errorPlace(field) {
            if (field === 'reason.detail') return 'detail-error';
            if (field.startsWith('reason')) return 'reason-error';
            if (field.startsWith('student')) return 'student-error';
            return 'register-status';
          }

          form.addEventListener('submit', async (event) => {
            event.preventDefault();
            if (submit.disabled) return;
            for (const id of ['student-error', 'reason-error', 'detail-error', 'register-status']) G.say(id, '');
            const reason = chosenReason();
            const text = detail.value.trim();
            let complete = true;
            if (!student) { G.say('student-error', '학년, 반, 번호를 골라 학생을 확인하세요.'); complete = false; }
            if (!reason) { G.say('reason-error', '사유를 고르세요.'); complete = false; }
            if (reason && reason.requiresDetail && (text.length < 1 || text.length > 200)) {
              G.say('detail-error', '상세 내용을 1–200자로 적으세요.');
              complete = false;
            }
            if (!complete) return;
            const content = {
              student: { grade: student.grade, classNumber: student.classNumber, number: student.number },
              reason: reason.requiresDetail ? { code: reason.code, detail: text } : { code: reason.code },
            };
            // Changed content is a new registration; the same content keeps its id.
            const key = JSON.stringify(content);
            if (!pending || pending.key !== key) pending = { id: G.uuid(), key };
            submit.disabled = true;
            try {
              await send(pending, content, student, reason);
            } finally {
              submit.disabled = false;
            }
          });

          async function send(registration, content, who, reason) {
            for (let attempt = 0; ; attempt++) {
              try {
                const answer = await G.api('POST', base + '/guidances', Object.assign({ guidanceId: registration.id }, content));
                pending = null;
                remember({
                  guidanceId: answer.guidanceId, grade: who.grade, classNumber: who.classNumber, number: who.number,
                  name: who.name, label: reason.label, detail: content.reason.detail || '', at: new Date().toISOString(),
                });
                G.say('register-status', '등록했습니다: ' + who.name + ' · ' + reason.label, 'ok');
                clearChoice();
                return;
              } catch (error) {
                const unavailable = error.status === 503 || error.status === 0;
                if (unavailable && attempt < retries) {
                  const wait = Math.min(Math.max(error.retryAfter || 2, 1), 10);
                  G.say('register-status', (error.status === 0 ? '서버에 연결할 수 없습니다.' : '서버가 잠시 응답할 수 없습니다(503).')
                    + ' 같은 지도로 ' + wait + '초 뒤 다시 보냅니다(' + (attempt + 1) + '/' + retries + ').', 'warn');
                  await G.sleep(wait * 1000);
                  continue;
                }
                if (unavailable) {
                  G.say('register-status', '서버가 계속 응답하지 않습니다(503). 등록을 다시 누르면 같은 지도로 보냅니다. 두 번 기록되지 않습니다.', 'warn');
                  return;
                }
                const field = error.fields[0];
                G.say(field ? errorPlace(field) : 'register-status', G.message(error, fieldMessages), 'warn');
                return;
              }
            }
          }

          function clearChoice() {
            for (const input of form.querySelectorAll('input[name=reason]')) input.checked = false;
            detail.value = '';
            $('detail-row').hidden = true;
            number.value = '';
            showStudent(null);
            number.focus();
          }

          // Today's registrations on this device, kept in its storage for the
          // school's day.

          function readToday() {
            try {
              const saved = JSON.parse(localStorage.getItem(storageKey) || 'null');
              return saved && saved.date === G.today() && Array.isArray(saved.items) ? saved.items : [];
            } catch (e) {
              return [];
            }
          }

          function writeToday(items) {
            localStorage.setItem(storageKey, JSON.stringify({ date: G.today(), items }));
            renderToday();
          }

          function remember(item) {
            writeToday([item].concat(readToday().filter((i) => i.guidanceId !== item.guidanceId)));
          }

          function renderToday() {
            const items = readToday();
            $('today-empty').hidden = items.length > 0;
            $('today').replaceChildren(...items.map((item) => G.el('li', {},
              G.el('div', {},
                G.el('div', {}, item.grade + '학년 ' + item.classNumber + '반 ' + item.number + '번 ' + item.name),
                G.el('div', { class: 'meta' }, G.clock(item.at) + ' · ' + item.label + (item.detail ? ' — ' + item.detail : ''))),
              G.el('button', { type: 'button', class: 'danger', onclick: () => remove(item) }, '삭제'))));
          }

          async function remove(item) {
            if (!window.confirm(item.name + ' 학생의 지도(' + item.label + ')를 삭제할까요?')) return;
            G.say('today-status', '');
            try {
              await G.api('DELETE', base + '/grades/' + item.grade + '/guidances/' + encodeURIComponent(item.guidanceId));
              writeToday(readToday().filter((i) => i.guidanceId !== item.guidanceId));
              G.say('today-status', '삭제했습니다: ' + item.name + ' · ' + item.label, 'ok');
            } catch (error) {
              G.say('today-status', '삭제하지 못했습니다. ' + G.message(error), 'warn');
            }
          }

          load();
        })();
        """#)
}
