import Guidance

/// What guidance-dev prints once everything runs: the one address teachers
/// open, the services' own, and a walk from a gate registration to a
/// teacher's inbox, with the sample roster's demo tokens.
enum DevGuide {
    static func text(ingestPort: Int, notifierPort: Int, roster: Roster) -> String {
        let ingest = "http://127.0.0.1:\(ingestPort)"
        let notifier = "http://127.0.0.1:\(notifierPort)"
        let auth = roster.authenticationEnabled
        func bearer(_ teacher: String) -> String { auth ? " -H 'Authorization: Bearer demo-\(teacher)'" : "" }
        return """

            guidance-ingest    \(ingest)   (healthz, readyz, metrics)
            guidance-notifier  \(notifier)   (healthz, readyz, metrics)
            roster: \(roster.schools.count) school(s), \(roster.studentCount) students\(auth ? "; every teacher's demo token is demo-<teacherId>" : "; authentication off")

            For teachers, one address:  \(ingest)/
              sign in with 접속 키 demo-t-hr-1-02 (1학년 2반 담임, also on gate duty), or 로그인 링크 for
              t-hr-1-02@demo-hs.school.example (the e-mail lands in var/mail/ as an .eml file without SMTP_URL);
              교문 지도: tap 1학년 → 2반 → 12, a reason, 등록; 명단 → 우리 반 shows it.
              demo-t-admin has 관리 (오늘 명단 보내기, the access record); demo-t-vd-1 the 봉사 명단;
              설정 → 기기 연결 shows a code that signs another device in.
              (The notifier's own address sends a browser to this one.)

            With curl (each answer on a line of its own):

            1. The gate teacher looks up grade 1, class 3, number 12:
               curl -s -w '\\n'\(bearer("t-gate-01")) \(ingest)/v1/schools/demo-hs/students/1/3/12

            2. ...and records a guidance:
               curl -s -w '\\n' -X POST\(bearer("t-gate-01")) -H 'Content-Type: application/json' \\
                 -d '{"student":{"grade":1,"classNumber":3,"number":12},"reason":{"code":"others","detail":"길에 껌을 뱉음"}}' \\
                 \(ingest)/v1/schools/demo-hs/guidances

            3. The homeroom teacher's list for today (the notifier applies the event within a second):
               sleep 1; curl -s -w '\\n'\(bearer("t-hr-1-03")) '\(notifier)/v1/schools/demo-hs/guidances?grade=1&classNumber=3'

            4. The admin sends today's digests now (the schedule does it at 08:50 Seoul time):
               curl -s -w '\\n' -X POST\(bearer("t-admin")) -H 'Content-Type: application/json' -d '{"schoolId":"demo-hs"}' \(notifier)/v1/digests/run

            5. The homeroom teacher (class list) and the volunteer-duty teacher (grade list) read their inboxes:
               curl -s -w '\\n'\(bearer("t-hr-1-03")) \(notifier)/v1/teachers/t-hr-1-03/inbox
               curl -s -w '\\n'\(bearer("t-vd-1")) \(notifier)/v1/teachers/t-vd-1/inbox

            Ctrl-C stops everything.
            """
    }
}
