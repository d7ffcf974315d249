import Access
import Common
import Foundation
import Guidance
import HTTP
import Images
import Synchronization

/// Students' photos: those the school uploaded (관리 → 명부, kept in the
/// photo log and written by it to a folder of this process), else
/// `ROSTER_DIR/photos/<schoolId>/<studentId>.jpg` (or `.png`, `.webp`): a student id is unique within its school only, so a
/// photo is found by both (a second school's `s10101` is another child). They are personal data of minors: served only to a signed-in
/// teacher of the school who may see the student (gate and admin teachers
/// any, a homeroom teacher their class, a volunteer-duty teacher their
/// grade), kept by the teacher's browser only (`Cache-Control: private`),
/// never logged, never sent elsewhere.
///
/// Schools' photos are what they have, often 50–150 KB JPEGs; a phone at the
/// gate gets each as a JPEG of at most `shown` pixels (the face check's size
/// at twice the CSS pixels), made once from the file by libvips and kept in
/// memory only (`Smaller`) until the file changes.
package struct StudentPhotos: Sendable {
    /// The photos folder; nil when the roster was given whole (tests).
    let directory: String?
    /// The folder the photo log writes the schools' uploaded photos to
    /// (`PhotoLog`), looked in first; nil without one.
    let uploads: String?
    /// Every photo served is recorded.
    let accessLog: AccessLog?
    let smaller = Smaller()
    let logger: Logger

    static let types = [("jpg", "image/jpeg"), ("png", "image/png"), ("webp", "image/webp")]
    /// Most bytes one photo may have; a larger file is refused, not sent.
    static let maxBytes = 2 * 1024 * 1024

    /// The size served: the face check's portrait (3:4) at 2× its CSS pixels.
    package static let shown = (width: 300, height: 400)
    package static let quality = 70

    package init(rosterDirectory: String?, uploads: String? = nil, accessLog: AccessLog? = nil, logger: Logger) {
        directory = rosterDirectory.map { URL(fileURLWithPath: $0).appendingPathComponent("photos").path }
        self.uploads = uploads
        self.accessLog = accessLog
        self.logger = logger
        warnOfUnscopedPhotos()
    }

    /// The path `GET` serves a student's photo at.
    package static func path(_ student: Student) -> String {
        "/v1/schools/\(student.schoolID.percentEncoded)/students/\(student.id.percentEncoded)/photo"
    }

    /// Where a page loads the student's photo from: this service when the
    /// folder has one, else the roster's https `photo_url`, else nil (none).
    package func url(for student: Student) -> String? {
        if file(for: student) != nil { return StudentPhotos.path(student) }
        return student.photoURL.isEmpty ? nil : student.photoURL
    }

    /// Whether `teacher` may see the student's photo: gate and admin
    /// teachers any of their school, a homeroom teacher their class, a
    /// volunteer-duty teacher their grade (any of their roles). Lists that
    /// name other students show them without a photo.
    package static func sees(_ teacher: Teacher, _ student: Student) -> Bool {
        teacher.schoolID == student.schoolID
            && (teacher.hasAny(of: [.gate, .admin])
                || (teacher.has(.homeroom) && teacher.grade == student.grade && teacher.classNumber == student.classNumber)
                || (teacher.has(.volunteerDuty) && teacher.grade == student.grade))
    }

    /// The photo address a list shows `teacher` for the student: none
    /// outside what the teacher may see (authentication off: every one).
    package func url(for student: Student, seenBy teacher: Teacher?) -> String? {
        guard teacher.map({ StudentPhotos.sees($0, student) }) ?? true else { return nil }
        return url(for: student)
    }

    /// The student's photo file, its media type and what `lstat` says of
    /// it, if the school's folder has one.
    func file(for student: Student) -> (path: String, type: String, info: stat)? {
        guard student.schoolID.isPlainFileName, student.id.isPlainFileName else { return nil }
        // The school's uploads first (already the size served), then the roster folder's.
        let uploaded = uploads.map { $0 + "/" + student.schoolID + "/" + student.id + ".jpg" }
        var info = stat()
        if let uploaded, lstat(uploaded, &info) == 0, info.st_mode & S_IFMT == S_IFREG { return (uploaded, "image/jpeg", info) }
        guard let directory else { return nil }
        for (suffix, type) in StudentPhotos.types {
            let path = directory + "/" + student.schoolID + "/" + student.id + "." + suffix
            // A regular file of the folder only: lstat does not follow a link.
            if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG { return (path, type, info) }
        }
        return nil
    }

    /// Photos left directly in `photos/` (the layout before photos were kept
    /// by school) are never served: a file named by a student id alone
    /// could be any school's child. Says so once at start, naming the count
    /// only, so that an operator moves them into `photos/<schoolId>/`.
    private func warnOfUnscopedPhotos() {
        guard let directory, let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        let unscoped = names.filter { name in StudentPhotos.types.contains { name.hasSuffix("." + $0.0) } }
        guard !unscoped.isEmpty else { return }
        logger.warning(
            "photos not served: they are directly in photos/, not in a school's folder; move each into photos/<school_id>/",
            ["directory": directory, "files": "\(unscoped.count)"])
    }

    /// The photo's bytes and what `fstat` says of them: opened without
    /// following a link (a link put in the folder in the meantime included),
    /// a regular file of at most `maxBytes`.
    static func read(_ path: String) -> (bytes: [UInt8], info: stat)? {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= maxBytes else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            filled += count
        }
        return (bytes, info)
    }

    package func routes(into router: inout GuardedRouter) {
        router.get("/v1/schools/{schoolId}/students/{studentId}/photo", .school(roles: [.gate, .admin, .homeroom, .volunteerDuty]), photo)
    }

    @Sendable func photo(_ request: Request, _ caller: Caller) async throws -> Response {
        let (schoolID, studentID) = (request.parameter("schoolId"), request.parameter("studentId"))
        guard let student = caller.roster.student(school: schoolID, id: studentID) else {
            throw HTTPError.notFound("no student '\(studentID)' at this school")
        }
        // The same answer for a student outside the teacher's scope as for an unknown one.
        if let teacher = caller.teacher, !StudentPhotos.sees(teacher, student) {
            throw HTTPError.notFound("no student '\(studentID)' at this school")
        }
        guard let file = file(for: student), let photo = await served(file) else {
            throw HTTPError.notFound("no photo of student '\(studentID)'")
        }
        let etag = "\"\(photo.version)\""
        // Asked again each time it is shown (a 304 when unchanged), so that a
        // view is a read the access record sees; offline, the app's service
        // worker has its copy.
        let headers = [("ETag", etag), ("Cache-Control", "private, no-cache")]
        // Shown again from the browser's copy (304) is a read too (once a day,
        // `AccessLog`). A photo the gate fetches ahead when a class is opened
        // (`X-Purpose: prefetch`) is not: the class's read is recorded, and the
        // face check shown asks for its photo again, which is.
        if request.header("x-purpose") != "prefetch" {
            accessLog?.record(caller, .photo, school: schoolID, target: studentID)
        }
        if request.header("if-none-match") == etag { return Response(status: 304, headers: headers) }
        return Response(status: 200, headers: [("Content-Type", photo.type)] + headers, body: photo.bytes)
    }

    /// The photo `file(for:)` found as served, and which version of the file
    /// it was made from: the smaller JPEG, or the file as it is when libvips
    /// cannot read it (the browser may; a warning names the file, once per version).
    func served(_ file: (path: String, type: String, info: stat)) async -> Smaller.Photo? {
        if let kept = smaller.kept(file.path, version: StudentPhotos.version(file.info)) { return kept }
        // Made on the images' threads, one per core, not the HTTP server's: a school's photo takes ~15 ms of CPU to decode.
        let (smaller, logger, path, type) = (self.smaller, self.logger, file.path, file.type)
        return try? await BlockingExecutor.processors.run { StudentPhotos.make(path, type: type, keptIn: smaller, logger: logger) }
    }

    private static func make(_ path: String, type: String, keptIn smaller: Smaller, logger: Logger) -> Smaller.Photo? {
        guard let (bytes, opened) = StudentPhotos.read(path) else { return nil }
        // The file read may be newer than the one looked at a moment ago: name what was read.
        let version = StudentPhotos.version(opened)
        let photo: Smaller.Photo
        do {
            let made = try Images.smallerJPEG(bytes, width: shown.width, height: shown.height, quality: quality)
            photo = Smaller.Photo(type: "image/jpeg", bytes: made, version: version)
        } catch {
            logger.warning(
                "photo served as it is: libvips cannot read it", ["file": URL(fileURLWithPath: path).lastPathComponent, "error": "\(error)"]
            )
            photo = Smaller.Photo(type: type, bytes: bytes, version: version)
        }
        smaller.keep(path, photo)
        // Decoding took about a megabyte, freed now: the pages go back, so resident
        // memory reflects what is kept (a photo is made once per process).
        Memory.releaseFreePages()
        return photo
    }

    /// Which file a photo was made from, and at what size: its ETag.
    static func version(_ info: stat) -> String {
        "\(info.st_size)-\(info.st_mtim.tv_sec)-\(info.st_mtim.tv_nsec)-\(info.st_ino)-\(shown.width)"
    }

    /// The photos served so far, by file and version, at most `maxBytes`
    /// in all (the oldest made go first). Memory only: gone with the
    /// process, never written anywhere.
    final class Smaller: Sendable {
        struct Photo: Sendable {
            let type: String
            let bytes: [UInt8]
            let version: String
        }
        static let maxBytes = 64 * 1024 * 1024
        private struct State {
            var photos: [String: Photo] = [:]
            var order: [String] = []
            var bytes = 0
        }
        private let state = Mutex(State())

        func kept(_ path: String, version: String) -> Photo? {
            state.withLock { state in state.photos[path].flatMap { $0.version == version ? $0 : nil } }
        }

        func keep(_ path: String, _ photo: Photo) {
            state.withLock { state in
                if let old = state.photos.removeValue(forKey: path) {
                    state.bytes -= old.bytes.count
                    state.order.removeAll { $0 == path }
                }
                while state.bytes + photo.bytes.count > Smaller.maxBytes, !state.order.isEmpty {
                    let oldest = state.order.removeFirst()
                    state.bytes -= state.photos.removeValue(forKey: oldest)?.bytes.count ?? 0
                }
                state.photos[path] = photo
                state.order.append(path)
                state.bytes += photo.bytes.count
            }
        }
    }
}
