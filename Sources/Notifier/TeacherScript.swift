import Web

extension TeacherPage {
    /// The teacher page's behaviour: the inbox, a digest opened and marked
    /// read, today's list by the chosen filter, and the admin's run button
    /// and failed deliveries.
    static let script = Asset(name: "teacher.js", contentType: "text/javascript; charset=utf-8", text: #"""
        'use strict';
        (() => {
          const G = window.Guidance;
          const $ = (id) => document.getElementById(id);
          const data = document.body.dataset;
          const inboxURL = '/v1/teachers/' + encodeURIComponent(data.teacher) + '/inbox';
          const schoolURL = '/v1/schools/' + encodeURIComponent(data.school);
          let digests = [];

          async function loadInbox() {
            try {
              digests = (await G.api('GET', inboxURL)).items;
            } catch (error) {
              G.say('inbox-status', '받은 다이제스트를 불러오지 못했습니다. ' + G.message(error), 'warn');
              return;
            }
            G.say('inbox-status', '');
            renderInbox();
          }

          function renderInbox() {
            const unread = digests.filter((d) => !d.read).length;
            $('unread-count').hidden = unread === 0;
            $('unread-count').textContent = '읽지 않음 ' + unread;
            $('inbox-empty').hidden = digests.length > 0;
            $('inbox').replaceChildren(...digests.map((digest) => G.el('li', { class: digest.read ? '' : 'unread' },
              G.el('div', {},
                G.el('button', { type: 'button', class: 'link', onclick: () => open(digest.digestId) }, digest.subject),
                G.el('div', { class: 'meta' }, digest.date + (digest.revision > 1 ? ' · 수정 ' + (digest.revision - 1) : '')
                  + ' · ' + (digest.read ? '읽음' : '읽지 않음'))))));
          }

          function groupName(student) { return student.grade + '학년 ' + student.classNumber + '반'; }

          async function open(digestId) {
            const digest = digests.find((d) => d.digestId === digestId);
            if (!digest) {
              G.say('inbox-status', '이 다이제스트를 찾을 수 없습니다. 다른 교사의 것이거나 주소가 잘못되었습니다.', 'warn');
              return;
            }
            const amendment = digest.revision > 1;
            const groups = new Map();
            for (const entry of digest.entries) {
              const name = groupName(entry.student);
              if (!groups.has(name)) groups.set(name, []);
              groups.get(name).push(entry);
            }
            const body = [];
            if (digest.entries.length === 0) body.push(G.el('p', {}, '지도 기록이 없습니다.'));
            for (const [name, entries] of groups) {
              body.push(G.el('h3', {}, name));
              body.push(G.el('table', {},
                G.el('thead', {}, G.el('tr', {}, ...['번호', '이름', '사유', '시각'].concat(amendment ? ['변경'] : []).map((h) => G.el('th', { scope: 'col' }, h)))),
                G.el('tbody', {}, ...entries.map((entry) => G.el('tr', { class: entry.change === 'removed' ? 'removed' : '' },
                  G.el('td', {}, entry.student.number),
                  G.el('td', {}, entry.student.name),
                  G.el('td', { class: 'detail' }, entry.reason.label + (entry.reason.detail ? ' — ' + entry.reason.detail : '')),
                  G.el('td', {}, G.clock(entry.occurredAt)),
                  amendment ? G.el('td', {}, entry.change === 'removed' ? '삭제' : '추가') : null)))));
            }
            $('digest-subject').textContent = digest.subject;
            $('digest-meta').textContent = digest.date + (amendment ? ' · 수정본 ' + (digest.revision - 1) : '') + ' · ' + digest.entries.length + '건';
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

          $('digest-close').addEventListener('click', () => {
            $('digest').hidden = true;
            history.replaceState(null, '', '/');
          });

          async function loadToday() {
            const chosen = document.querySelector('input[name=filter]:checked');
            const query = chosen ? chosen.value : '';
            try {
              const list = await G.api('GET', schoolURL + '/guidances' + (query ? '?' + query : ''));
              G.say('today-status', '');
              renderToday(list);
            } catch (error) {
              G.say('today-status', '오늘의 지도를 불러오지 못했습니다. ' + G.message(error), 'warn');
            }
          }

          function renderToday(list) {
            if (list.items.length === 0) {
              $('today-body').replaceChildren(G.el('p', { class: 'meta' }, list.date + ': 등록된 지도가 없습니다.'));
              return;
            }
            $('today-body').replaceChildren(
              G.el('p', { class: 'meta' }, list.date + ' · ' + list.items.length + '건'),
              G.el('table', {},
                G.el('thead', {}, G.el('tr', {}, ...['학년·반', '번호', '이름', '사유', '시각'].map((h) => G.el('th', { scope: 'col' }, h)))),
                G.el('tbody', {}, ...list.items.map((item) => G.el('tr', {},
                  G.el('td', {}, groupName(item.student)),
                  G.el('td', {}, item.student.number),
                  G.el('td', {}, item.student.name),
                  G.el('td', { class: 'detail' }, item.reason.label + (item.reason.detail ? ' — ' + item.reason.detail : '')),
                  G.el('td', {}, G.clock(item.occurredAt)))))));
          }

          $('filters').addEventListener('change', loadToday);

          async function run() {
            const button = $('run');
            button.disabled = true;
            G.say('run-status', '다이제스트를 만드는 중…');
            try {
              const answer = await G.api('POST', '/v1/digests/run', {});
              const written = answer.runs.reduce((sum, r) => sum + r.digests, 0);
              G.say('run-status', (answer.runs[0] ? answer.runs[0].date + ': ' : '') + '다이제스트 ' + written + '개를 만들었습니다.', 'ok');
              loadInbox();
              loadFailed();
            } catch (error) {
              G.say('run-status', '실행하지 못했습니다. ' + G.message(error), 'warn');
            } finally {
              button.disabled = false;
            }
          }

          async function loadFailed() {
            let items;
            try {
              items = (await G.api('GET', schoolURL + '/deliveries?status=failed&limit=50')).items;
            } catch (error) {
              G.say('failed-status', '실패한 발송을 불러오지 못했습니다. ' + G.message(error), 'warn');
              return;
            }
            $('failed-empty').hidden = items.length > 0;
            $('failed').replaceChildren(...items.map((item) => G.el('li', {},
              G.el('div', {},
                G.el('div', {}, item.teacherId + ' · ' + (item.channel === 'email' ? '이메일' : '웹훅') + ' · ' + item.target),
                G.el('div', { class: 'meta' }, '시도 ' + item.attempts + '회 · ' + (item.lastError || ''))),
              G.el('button', { type: 'button', class: 'secondary', onclick: () => retry(item) }, '다시 보내기'))));
          }

          async function retry(item) {
            try {
              await G.api('POST', schoolURL + '/deliveries/' + encodeURIComponent(item.deliveryId) + '/retry');
              G.say('failed-status', '다시 보내도록 했습니다: ' + item.teacherId, 'ok');
            } catch (error) {
              G.say('failed-status', '다시 보내지 못했습니다. ' + G.message(error), 'warn');
            }
            loadFailed();
          }

          if (data.role === 'admin') {
            $('run').addEventListener('click', run);
            loadFailed();
          }
          loadToday();
          loadInbox().then(() => { if (data.open) open(data.open); });
        })();
        """#)
}
