import Access
import Common
import Guidance
import HTTP
import Sessions
import Uploads
import Web

/// 관리 → 명부 (issue 68): a school's admin uploads its students (CSV as
/// Korean Excel saves it, or XLSX), sees what the upload would change, and
/// applies it as the school's next roster version, which the roster log
/// carries to every replica of both services; an earlier version can be
/// put back. Nothing applies without the admin's confirmation, and the
/// confirmation applies exactly what was previewed or nothing: it names the
/// version the preview was made against, and a roster changed since is a 409.
package struct RosterHandlers: Sendable {
    let log: RosterLog
    let photoLog: PhotoLog
    let photos: StudentPhotos
    let roster: LiveRoster
    let accessLog: AccessLog
    let clock: @Sendable () -> Double

    /// The largest upload: a school's students as XLSX or CSV take some
    /// 100 bytes a row, so this is room for far more than any school has.
    static let maxUpload = 4 * 1024 * 1024

    func routes(into router: inout GuardedRouter) {
        let admins = Access.school(roles: [.admin])
        router.get("/v1/schools/{schoolId}/roster", admins, versions)
        router.post("/v1/schools/{schoolId}/roster/students/preview", admins, maxBody: RosterHandlers.maxUpload, preview)
        router.post("/v1/schools/{schoolId}/roster/students", admins, maxBody: RosterHandlers.maxUpload, apply)
        router.post("/v1/schools/{schoolId}/roster/versions/{version}/restore", admins, restore)
        router.post("/v1/schools/{schoolId}/roster/teachers/preview", admins, maxBody: RosterHandlers.maxUpload, previewTeachers)
        router.post("/v1/schools/{schoolId}/roster/teachers", admins, maxBody: RosterHandlers.maxUpload, applyTeachers)
        router.post("/v1/schools/{schoolId}/roster/photos/preview", admins, maxBody: RosterHandlers.maxPhotoUpload, previewPhotos)
        router.post("/v1/schools/{schoolId}/roster/photos", admins, maxBody: RosterHandlers.maxPhotoUpload, applyPhotos)
        router.get("/v1/schools/{schoolId}/roster/tables/{table}", admins, table)
        router.post("/v1/schools/{schoolId}/roster/tables/{table}/preview", admins, maxBody: RosterHandlers.maxTable, previewTable)
        router.post("/v1/schools/{schoolId}/roster/tables/{table}", admins, maxBody: RosterHandlers.maxTable, applyTable)
    }

    /// The largest school table (학교 설정): a year of days off is a few KiB.
    static let maxTable = 256 * 1024

    /// `GET …/roster`: the version in service (0: the operator's folder),
    /// how many students it seats, the newest (`latest`: one waiting for
    /// its day, 진급, may be newer than the one in service), and every
    /// version, newest first.
    @Sendable func versions(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = request.parameter("schoolId")
        var writer = JSONWriter(capacity: 512)
        writer.field("schoolId", school)
        writer.field("version", roster.version(of: school))
        writer.field("latest", log.latest(of: school))
        writer.field("students", caller.roster.studentCount(school: school))
        writer.array("versions", log.history(of: school).reversed()) { writer, entry in
            writer.field("version", entry.version)
            writer.field("madeBy", entry.madeBy)
            writer.field("madeAt", entry.madeAt)
            if let restores = entry.restores { writer.field("restores", restores) }
            if let students = entry.students { writer.field("students", students) }
            writer.field("teachers", entry.teachers)
            writer.field("tables", entry.tables.map(\.slug))
            if let effective = entry.effective {
                writer.field("effective", effective)
                writer.field("pending", log.isPending(entry.version, of: school))
            }
        }
        return .json(written: writer.finish())
    }

    /// `POST …/roster/students/preview` with the file as the body: what
    /// applying it would change, against the version in service (`basedOn`).
    @Sendable func preview(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = request.parameter("schoolId")
        let basedOn = log.latest(of: school)
        let upload = try await read(request, caller)
        accessLog.record(caller, .roster, school: school, target: "preview")
        var writer = JSONWriter.preview(school: school, basedOn: basedOn, refused: upload.refused)
        writer.field("students", upload.students.count)
        writer.array("added", upload.added) { $0.student($1) }
        writer.array("left", upload.left) { $0.student($1) }
        writer.changes("moved", upload.moved.map { ($0.before, $0.after) }) { $0.student($1) }
        writer.changes("renamed", upload.renamed.map { ($0.before, $0.after) }) { $0.student($1) }
        // 진급: those a grade up, and those who left from the school's top grade.
        let top = upload.left.map(\.grade).max().map { max($0, caller.roster.students(school: school).map(\.grade).max() ?? $0) }
        writer.field("promoted", upload.moved.count { $0.after.grade == $0.before.grade + 1 })
        writer.array("graduates", upload.left.filter { $0.grade == top }) { $0.student($1) }
        return .json(written: writer.finish())
    }

    /// `POST …/roster/students?basedOn=N` with the file previewed: the
    /// school's next version, once every replica can read it; 409 when the
    /// roster is no longer version N, 422 while rows are refused.
    @Sendable func apply(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = request.parameter("schoolId")
        let basedOn = try await self.basedOn(request, school: school)
        let upload = try await read(request, caller)
        try RosterHandlers.noneRefused(upload.refused)
        guard !upload.students.isEmpty else { throw HTTPError.unprocessable("the file lists no student") }
        return try await publish(
            school: school, version: basedOn + 1, students: upload.students, effective: try effective(request, caller), restores: nil,
            caller)
    }

    /// `POST …/roster/versions/{version}/restore?basedOn=N`: the students
    /// of an earlier version, as the school's next version.
    @Sendable func restore(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = request.parameter("schoolId")
        let basedOn = try await self.basedOn(request, school: school)
        guard let version = Int(request.parameter("version")), version >= 1 else {
            throw HTTPError(FieldError(field: "version", message: "must be a version number"))
        }
        guard let earlier = try await log.version(version, of: school) else {
            throw HTTPError.notFound("this school has no roster version \(version)")
        }
        return try await publish(
            school: school, version: basedOn + 1, students: earlier.students, teachers: earlier.teachers, tables: earlier.tables,
            restores: version, caller)
    }

    /// A 422 naming each refused row: a file applies whole or not at all.
    private static func noneRefused(_ refused: [StudentsUpload.Refused]) throws(HTTPError) {
        guard refused.isEmpty else {
            throw HTTPError.unprocessable(
                "\(refused.count) rows are refused (the preview names each with its line); fix them and upload again",
                errors: refused.map { FieldError(field: "line \($0.line)", message: $0.reason) })
        }
    }

    /// The day a version takes effect (`effective`, 진급: the new school
    /// year's first day), after the school's today and within 400 days;
    /// nil (at once) when not given.
    private func effective(_ request: Request, _ caller: Caller) throws(HTTPError) -> String? {
        guard let text = request.query["effective"], !text.isEmpty else { return nil }
        guard let day = Timestamp.civilDay(text) else { throw HTTPError(FieldError(field: "effective", message: "is not YYYY-MM-DD")) }
        let zone = caller.roster.school(request.parameter("schoolId"))?.timeZone ?? .gmt
        let today = Timestamp.civilDay(Timestamp.localDate(clock(), in: zone)) ?? 0
        guard day > today, day - today <= 400 else {
            throw HTTPError.unprocessable(
                "effective must be a day after the school's today (\(Timestamp.dateString(civil: today))), within 400 days; leave it out to apply at once",
                errors: [FieldError(field: "effective", message: "is not after today, within 400 days")])
        }
        return text
    }

    /// The version the request was previewed against (`basedOn`), which
    /// must still be the school's newest.
    private func basedOn(_ request: Request, school: String) async throws(HTTPError) -> Int {
        guard let text = request.query["basedOn"], let basedOn = Int(text), basedOn >= 0 else {
            throw HTTPError(FieldError(field: "basedOn", message: "is required: the version the preview showed (0: the folder's roster)"))
        }
        // A version another replica just applied reaches this one within a poll: it is waited for, briefly.
        if basedOn > log.latest(of: school) { _ = await log.knows(basedOn, of: school, atMost: .seconds(3)) }
        let current = log.latest(of: school)
        guard basedOn == current else {
            throw HTTPError(
                status: 409,
                detail: "the school's roster is version \(current) now, not \(basedOn): someone applied a version since; preview again")
        }
        return basedOn
    }

    /// `POST …/roster/teachers/preview` with the file as the body: what
    /// applying it would change, against the version in service.
    @Sendable func previewTeachers(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = request.parameter("schoolId")
        let basedOn = log.latest(of: school)
        let upload = try await readTeachers(request, caller)
        accessLog.record(caller, .roster, school: school, target: "teachers preview")
        var writer = JSONWriter.preview(school: school, basedOn: basedOn, refused: upload.refused)
        writer.field("teachers", upload.teachers.count)
        writer.array("added", upload.added) { $0.teacher($1) }
        writer.array("left", upload.left) { $0.teacher($1) }
        writer.changes("changed", upload.changed.map { ($0.before, $0.after) }) { $0.teacher($1) }
        writer.field("problem", upload.problem)
        return .json(written: writer.finish())
    }

    /// `POST …/roster/teachers?basedOn=N` with the file previewed: the
    /// school's next version, its students as they are and these teachers.
    @Sendable func applyTeachers(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = request.parameter("schoolId")
        let basedOn = try await self.basedOn(request, school: school)
        let upload = try await readTeachers(request, caller)
        try RosterHandlers.noneRefused(upload.refused)
        if let problem = upload.problem { throw HTTPError.unprocessable(problem) }
        return try await publish(
            school: school, version: basedOn + 1, students: nil, teachers: upload.teachers, effective: try effective(request, caller),
            restores: nil, caller)
    }

    /// `GET …/roster/tables/{table}`: the school's table as it is served
    /// now, as its file writes it without `school_id`: what 학교 설정 edits.
    @Sendable func table(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = request.parameter("schoolId")
        let table = try RosterHandlers.table(request)
        var writer = JSONWriter(capacity: 1024)
        writer.field("schoolId", school)
        writer.field("table", table.slug)
        writer.field("basedOn", log.latest(of: school))
        writer.field("columns", table.columns)
        writer.field("text", caller.roster.table(table, of: school))
        return .json(written: writer.finish())
    }

    /// `POST …/roster/tables/{table}/preview` with the table's text (CSV,
    /// `school_id` optional): the rows it adds and removes, or the first row
    /// refused, with its line and why, as the file would be.
    @Sendable func previewTable(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = request.parameter("schoolId")
        let basedOn = log.latest(of: school)
        let (table, text) = try RosterHandlers.tableText(request)
        accessLog.record(caller, .roster, school: school, target: "\(table.slug) preview")
        let change = Result { () throws(RosterError) in try caller.roster.tableChange(table, of: school, text: text) }
        var refused: [StudentsUpload.Refused] = []
        if case .failure(let error) = change { refused = [StudentsUpload.Refused(line: error.line ?? 1, reason: error.reason)] }
        var writer = JSONWriter.preview(school: school, basedOn: basedOn, refused: refused)
        writer.field("table", table.slug)
        if case .success(let change) = change {
            writer.field("rows", change.rows.count)
            writer.field("added", change.added.map { $0.joined(separator: " · ") })
            writer.field("removed", change.removed.map { $0.joined(separator: " · ") })
        }
        return .json(written: writer.finish())
    }

    /// `POST …/roster/tables/{table}?basedOn=N` with the text previewed: the
    /// school's next version, its students and teachers as they are and
    /// this table in place of what the school had of it.
    @Sendable func applyTable(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = request.parameter("schoolId")
        let basedOn = try await self.basedOn(request, school: school)
        let (table, text) = try RosterHandlers.tableText(request)
        do {
            _ = try caller.roster.tableChange(table, of: school, text: text)
        } catch {
            throw HTTPError.unprocessable(
                "the table is refused (the preview names the row); fix it and try again",
                errors: [FieldError(field: "line \(error.line ?? 1)", message: error.reason)])
        }
        return try await publish(school: school, version: basedOn + 1, students: nil, tables: [table: text], restores: nil, caller)
    }

    private static func table(_ request: Request) throws(HTTPError) -> SchoolTable {
        guard let table = SchoolTable(slug: request.parameter("table")) else {
            throw HTTPError.notFound(
                "no school table '\(request.parameter("table"))' (there are \(SchoolTable.allCases.map(\.slug).joined(separator: ", ")))")
        }
        return table
    }

    /// The table named in the path and the body as its text (UTF-8, or CP949 as Korean Excel saves CSV).
    private static func tableText(_ request: Request) throws(HTTPError) -> (SchoolTable, String) {
        let table = try table(request)
        guard !request.body.isEmpty else {
            throw HTTPError.unprocessable("the body is empty: send the table's text (CSV, its header first)")
        }
        do {
            return (table, try UploadedTable.csvText(request.body))
        } catch {
            throw HTTPError.unprocessable("the table cannot be read: \(error.reason)")
        }
    }

    /// The body as the school's students, read on the processors' threads
    /// (an XLSX is unzipped and parsed); a file that is no table is a 422.
    private func read(_ request: Request, _ caller: Caller) async throws -> StudentsUpload {
        try await table(request) { (rows, school) throws(RosterError) in
            try StudentsUpload.read(rows, school: school, current: caller.roster)
        }
    }

    /// The body as the school's teachers.
    private func readTeachers(_ request: Request, _ caller: Caller) async throws -> TeachersUpload {
        let uploader = caller.teacher?.id
        return try await table(request) { (rows, school) throws(RosterError) in
            try TeachersUpload.read(rows, school: school, current: caller.roster, uploader: uploader)
        }
    }

    /// The body read as a table, then by `read`, on the processors' threads
    /// (an XLSX is unzipped and parsed); a file that is no table, or whose
    /// header is not found, is a 422.
    private func table<Upload: Sendable>(
        _ request: Request, _ read: @escaping @Sendable ([CSV.Row], String) throws(RosterError) -> Upload
    ) async throws -> Upload {
        let (school, body) = (request.parameter("schoolId"), request.body)
        guard !body.isEmpty else { throw HTTPError.unprocessable("the body is empty: send the file's bytes (CSV or XLSX)") }
        let result = try await BlockingExecutor.processors.run { () -> Result<Upload, HTTPError> in
            do {
                return .success(try read(UploadedTable.rows(of: body, file: "upload"), school))
            } catch let error as UploadError {
                return .failure(.unprocessable("the file cannot be read: \(error.reason)"))
            } catch let error as RosterError {
                return .failure(.unprocessable(error.description))
            } catch {
                return .failure(.unprocessable("\(error)"))
            }
        }
        return try result.get()
    }

    private func publish(
        school: String, version: Int, students: [Student]?, teachers: [Teacher]? = nil, tables: [SchoolTable: String] = [:],
        effective: String? = nil, restores: Int?, _ caller: Caller
    ) async throws -> Response {
        let made = RosterVersion(
            schoolId: school, version: version, students: students, teachers: teachers, tables: tables, effective: effective,
            madeBy: caller.teacher?.id ?? "(authentication off)",
            madeAt: Timestamp.format(clock()), restores: restores)
        let entry: RosterLog.Entry
        do {
            entry = try await log.publish(made)
        } catch .superseded(let other) {
            throw HTTPError(
                status: 409, detail: "\(other.madeBy) applied version \(other.version) at \(other.madeAt) a moment before; preview again")
        } catch .tooLarge(let bytes) {
            throw HTTPError(status: 413, detail: "the version takes \(bytes) bytes, more than \(RosterLog.maxBytes) a roster version may")
        } catch .broker(let error) {
            throw error
        }
        accessLog.record(
            caller, .roster, school: school,
            target: "version=\(entry.version)" + (restores.map { " restores=\($0)" } ?? "") + (effective.map { " effective=\($0)" } ?? ""))
        var writer = JSONWriter(capacity: 256)
        writer.field("schoolId", school)
        writer.field("version", entry.version)
        writer.field("madeBy", entry.madeBy)
        writer.field("madeAt", entry.madeAt)
        if let restores { writer.field("restores", restores) }
        writer.field("students", entry.students ?? roster.current.studentCount(school: school))
        if let effective = entry.effective { writer.field("effective", effective) }
        return .json(written: writer.finish())
    }
}

extension JSONWriter {
    /// A preview's start: its school, the version it was made against, and
    /// the rows refused with their lines.
    static func preview(school: String, basedOn: Int, refused: [StudentsUpload.Refused]) -> JSONWriter {
        var writer = JSONWriter(capacity: 1024)
        writer.field("schoolId", school)
        writer.field("basedOn", basedOn)
        writer.array("refused", refused) { writer, refused in
            writer.field("line", refused.line)
            writer.field("reason", refused.reason)
        }
        return writer
    }

    /// Changes as `{"before": …, "after": …}`, each side written by `write`.
    mutating func changes<Item>(_ key: StaticString, _ changes: [(Item, Item)], _ write: @escaping (inout JSONWriter, Item) -> Void) {
        array(key, changes) { writer, change in
            writer.object("before") { write(&$0, change.0) }
            writer.object("after") { write(&$0, change.1) }
        }
    }

    /// A teacher as the roster's previews write one (roles as `teachers.csv` joins them).
    mutating func teacher(_ teacher: Teacher) {
        field("teacherId", teacher.id)
        field("name", teacher.name)
        field("email", teacher.email)
        field("roles", teacher.roleText)
        if let grade = teacher.grade { field("grade", grade) }
        if let classNumber = teacher.classNumber { field("class", classNumber) }
    }
}
