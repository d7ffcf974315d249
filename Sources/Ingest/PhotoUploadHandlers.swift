import Access
import Common
import Guidance
import HTTP
import Images
import Sessions
import Uploads
import Web

/// 관리 → 명부, photos: a ZIP of the school's photos, each file named by the
/// student's 학번 (`10101.jpg`: 1학년 1반 1번) or student id, in any folder of
/// the archive. Each is made the size the app shows (`StudentPhotos.shown`)
/// here; the original is not kept. The preview says which file is whose, which
/// files are refused and why (no such student, not a photo, unreadable), and
/// which students still have no photo; applying publishes them to the photo
/// log, which every replica of both services reads.
extension RosterHandlers {
    /// The largest ZIP: a school's photos as schools keep them (50–150 KB
    /// each) for some 500 students, a grade; a larger school sends a ZIP per
    /// grade. Unpacked, at most twice that (a ZIP bomb is refused).
    static let maxPhotoUpload = 64 * 1024 * 1024

    /// What a ZIP of photos holds for the school.
    package struct PhotosUpload: Sendable {
        package struct Matched: Sendable {
            package let file: String
            package let student: Student
            package let jpeg: [UInt8]
        }
        package var matched: [Matched] = []
        package var refused: [(file: String, reason: String)] = []
    }

    /// `POST …/roster/photos/preview` with the ZIP as the body.
    @Sendable func previewPhotos(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = request.parameter("schoolId")
        let upload = try await readPhotos(request, caller)
        accessLog.record(caller, .roster, school: school, target: "photos preview")
        return .json(written: photosAnswer(upload, school: school, caller: caller, published: false))
    }

    /// `POST …/roster/photos` with the ZIP previewed: each photo matched is
    /// published (a student's earlier photo replaced); the refused files
    /// change nothing.
    @Sendable func applyPhotos(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = request.parameter("schoolId")
        let upload = try await readPhotos(request, caller)
        guard !upload.matched.isEmpty else { throw HTTPError.unprocessable("no file of the ZIP is a photo of a student of this school") }
        try await photoLog.publish(upload.matched.map { PhotoLog.Photo(schoolId: school, studentId: $0.student.id, jpeg: $0.jpeg) })
        accessLog.record(caller, .roster, school: school, target: "photos=\(upload.matched.count)")
        return .json(written: photosAnswer(upload, school: school, caller: caller, published: true))
    }

    private func photosAnswer(_ upload: PhotosUpload, school: String, caller: Caller, published: Bool) -> [UInt8] {
        let matched = Set(upload.matched.map(\.student.id))
        let without = caller.roster.students(school: school).filter { !matched.contains($0.id) && photos.url(for: $0) == nil }
        var writer = JSONWriter(capacity: 1024 + upload.matched.count * 96)
        writer.field("schoolId", school)
        writer.field("published", published)
        writer.array("matched", upload.matched) { writer, item in
            writer.field("file", item.file)
            writer.student(item.student)
        }
        writer.array("refused", upload.refused) { writer, item in
            writer.field("file", item.file)
            writer.field("reason", item.reason)
        }
        writer.array("withoutPhoto", without) { $0.student($1) }
        return writer.finish()
    }

    /// The ZIP's photos matched to the school's students and made small, on
    /// the processors' threads; a body that is no ZIP is a 422.
    private func readPhotos(_ request: Request, _ caller: Caller) async throws -> PhotosUpload {
        let (school, body, roster) = (request.parameter("schoolId"), request.body, caller.roster)
        guard !body.isEmpty else { throw HTTPError.unprocessable("the body is empty: send the ZIP's bytes") }
        let read = try await BlockingExecutor.processors.run { () -> Result<PhotosUpload, HTTPError> in
            do {
                return .success(try RosterHandlers.photos(in: body, school: school, roster: roster))
            } catch {
                return .failure(.unprocessable("the file cannot be read as a ZIP: \(error)"))
            }
        }
        return try read.get()
    }

    /// Each file of the archive as a student's photo, or refused with why.
    package static func photos(in zip: [UInt8], school: String, roster: Roster) throws(UploadError) -> PhotosUpload {
        var upload = PhotosUpload()
        var found: [(file: String, student: Student, bytes: [UInt8])] = []
        var seen: [String: String] = [:]
        let entries = try ZipArchive.entries(of: zip, limits: ZipArchive.Limits(bytes: 2 * maxPhotoUpload)) { name in
            // Not the folders' clutter of a Mac or Windows.
            !name.hasPrefix("__MACOSX/") && !(name.split(separator: "/").last ?? "").hasPrefix(".")
                && !name.lowercased().hasSuffix("thumbs.db")
        }
        for entry in entries {
            let file = String(entry.name.split(separator: "/").last ?? "")
            let parts = file.split(separator: ".")
            guard parts.count == 2, ["jpg", "jpeg", "png", "webp"].contains(parts[1].lowercased()) else {
                upload.refused.append((file, "not a photo (.jpg, .png or .webp)"))
                continue
            }
            let stem = String(parts[0])
            guard let student = student(named: stem, school: school, roster: roster) else {
                upload.refused.append((file, "no student of this school with 학번 or id '\(stem)'"))
                continue
            }
            if let earlier = seen[student.id] {
                upload.refused.append((file, "\(earlier) is this student's photo too"))
                continue
            }
            seen[student.id] = file
            found.append((file, student, entry.bytes))
        }
        found.forEach(transformedBy: { item in
            Result { () throws(ImageError) in
                try Images.smallerJPEG(
                    item.bytes, width: StudentPhotos.shown.width, height: StudentPhotos.shown.height, quality: StudentPhotos.quality)
            }.map { (item.file, item.student, $0) }.mapError { ImageFailure(file: item.file, error: $0) }
        }) { (made: Result<(String, Student, [UInt8]), ImageFailure>) in
            switch made {
            case .success(let (file, student, jpeg)): upload.matched.append(PhotosUpload.Matched(file: file, student: student, jpeg: jpeg))
            case .failure(let failure): upload.refused.append((failure.file, "cannot be read as a photo: \(failure.error.reason)"))
            }
        }
        Memory.releaseFreePages()
        return upload
    }

    /// The student a file's name gives: the school's student id, or a 학번
    /// of five digits (grade, class in two, number in two: `10305` is 1학년
    /// 3반 5번).
    private static func student(named stem: String, school: String, roster: Roster) -> Student? {
        if let student = roster.student(school: school, id: stem) { return student }
        let digits = Array(stem.utf8)
        guard digits.count == 5, digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let number = Int(stem)
        else { return nil }
        return roster.student(school: school, grade: number / 10_000, classNumber: number / 100 % 100, number: number % 100)
    }
}

/// A photo libvips could not read, with its file's name.
struct ImageFailure: Error {
    let file: String
    let error: ImageError
}
