import Common
import Foundation
import XCTest

@testable import Guidance
@testable import Ingest

/// A registration body is read field by field; every mistake names its field.
final class RegisterRequestDecodingTests: XCTestCase {
    private func read(_ body: String) throws(FieldError) -> RegisterRequest {
        try RegisterRequest(json: JSONFields(JSONReader.object(Array(body.utf8))))
    }

    func testPlainBodiesReadAsSent() throws {
        XCTAssertEqual(
            try read(
                #"{"guidanceId":"8c4ab2f0-6b1e-4f7a-9d2c-3e5f7a9b1c2d","student":{"grade":2,"classNumber":10,"number":30},"reason":{"code":"others","detail":"교복 대신 체육복 / 운동화"},"recordedBy":"t-gate-01","occurredAt":"2026-11-30T07:52:10+09:00","extra":[1]}"#
            ),
            RegisterRequest(
                guidanceId: "8c4ab2f0-6b1e-4f7a-9d2c-3e5f7a9b1c2d", student: .init(grade: 2, classNumber: 10, number: 30),
                reason: .init(code: "others", detail: "교복 대신 체육복 / 운동화"), recordedBy: "t-gate-01", occurredAt: "2026-11-30T07:52:10+09:00"))
        XCTAssertEqual(
            try read(#"{"student":{"grade":1,"classNumber":3,"number":12},"reason":{"code":"noShoes","detail":null},"occurredAt":null}"#),
            RegisterRequest(
                guidanceId: nil, student: .init(grade: 1, classNumber: 3, number: 12), reason: .init(code: "noShoes", detail: nil),
                recordedBy: nil, occurredAt: nil))
    }

    func testSeatNumbersOutsideTheRosterRangeNameTheField() {
        let valid = #"{"student":{"grade":1,"classNumber":3,"number":12},"reason":{"code":"noShoes"}}"#
        let cases: [(String, String, String)] = [
            ("12", "-1", "student.number"), ("12", "0", "student.number"), ("12", "65536", "student.number"),
            (#""grade":1"#, #""grade":-9223372036854775808"#, "student.grade"),
            (#""classNumber":3"#, #""classNumber":1.5"#, "student.classNumber"),
            ("12", "1e308", "student.number"), ("12", "9223372036854775808", "student.number"), ("12", "\"12\"", "student.number"),
            (#"{"code":"noShoes"}"#, #"{"code":7}"#, "reason.code"), (#""reason":{"code":"noShoes"}"#, #""reason":"noShoes""#, "reason")
        ]
        for (old, new, field) in cases {
            let body = valid.replacingOccurrences(of: old, with: new)
            XCTAssertNotEqual(body, valid)
            XCTAssertThrowsError(try read(body), body) { XCTAssertEqual(($0 as! FieldError).field, field, body) }
        }
    }
}

/// A look-up's answer is written by hand; it reads as the encoder wrote it.
final class StudentViewTests: XCTestCase {
    /// What `StudentView` was before it wrote itself: synthesized, a missing photo `null`.
    private struct Encoded: Encodable {
        let studentId, schoolId: String
        let grade, classNumber, number: Int
        let name: String
        let photoUrl: PhotoURL
    }

    func testTheAnswerIsWhatTheEncoderWrote() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        for (name, photo) in [
            ("김민지", "https://photos.example/sa/s10312.jpg"), ("O\"Brien \\ 🎒", nil), ("tab\there", "/v1/schools/sa/students/s1/photo")
        ] {
            let student = Student(schoolID: "sa", id: "s10312", grade: 1, classNumber: 3, number: 12, name: name, photoURL: photo ?? "")
            let written = StudentView(student, photoUrl: photo).json
            let encoded = try encoder.encode(
                Encoded(
                    studentId: "s10312", schoolId: "sa", grade: 1, classNumber: 3, number: 12, name: name, photoUrl: PhotoURL(value: photo))
            )
            XCTAssertEqual(String(decoding: written, as: UTF8.self), String(decoding: encoded, as: UTF8.self))
        }
    }
}
