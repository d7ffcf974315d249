import Common
import Foundation
import Guidance
import XCTest

/// The case's state machine, without a store or a broker: what a teacher
/// may do to a case in each state, and who holds it.
final class CaseTests: XCTestCase {
    private let opened = GuidanceCase(
        caseId: GuidanceCase.id(school: "sa", student: "s1312", ruleKey: "*/3/7", ordinal: 1), schoolId: "sa", studentId: "s1312",
        origin: .rule, label: "선도위원회 검토 대상", roles: [.homeroom, .admin], openedAt: "2026-12-01T00:00:00Z")

    func testATeacherMovesAnOpenCaseThroughTheSchoolsStatesUntilItIsClosed() throws {
        var item = opened
        XCTAssertEqual(item.state.label, "확인 전")
        item = try item.applying(.move(.counselingPlanned, nextDate: "2026-12-03")).get()
        XCTAssertEqual(item.state, .counselingPlanned)
        XCTAssertEqual(item.nextDate, "2026-12-03")
        XCTAssertEqual(item.applying(.move(.counselingPlanned, nextDate: "2026-12-03")), .failure(.unchanged(.counselingPlanned)))
        item = try item.applying(.move(.counselingPlanned, nextDate: "2026-12-04")).get()
        XCTAssertEqual(item.nextDate, "2026-12-04", "a new date for the same state is a step")
        item = try item.applying(.note).get()
        item = try item.applying(.move(.guardianCounseling, nextDate: nil)).get()
        item = try item.applying(.move(.referred, nextDate: "2026-12-10")).get()
        item = try item.applying(.move(.closed, nextDate: "2026-12-11")).get()
        XCTAssertEqual(item.state.label, "종결")
        XCTAssertNil(item.nextDate, "a closed case is not due")
        XCTAssertEqual(item.applying(.note), .failure(.closed(.closed)))
        XCTAssertEqual(item.applying(.move(.counseled, nextDate: nil)), .failure(.closed(.closed)))
        XCTAssertEqual(item.applying(.withdraw), .failure(.closed(.closed)), "a closed case stays closed")
        XCTAssertEqual(opened.applying(.move(.new, nextDate: nil)), .failure(.notChosen(.new)))
        XCTAssertEqual(opened.applying(.move(.withdrawn, nextDate: nil)), .failure(.notChosen(.withdrawn)))
    }

    func testTheRecordsWithdrawAnOpenCaseAndOpenItAgain() throws {
        let moved = try opened.applying(.move(.counselingPlanned, nextDate: "2026-12-03")).get()
        let withdrawn = try moved.applying(.withdraw).get()
        XCTAssertEqual(withdrawn.state.label, "철회")
        XCTAssertFalse(withdrawn.state.isOpen)
        XCTAssertEqual(withdrawn.applying(.move(.counseled, nextDate: nil)), .failure(.closed(.withdrawn)))
        XCTAssertEqual(try withdrawn.applying(.reopen).get().state, .new)
        XCTAssertEqual(moved.applying(.reopen), .failure(.alreadyOpen))
    }

    func testARulesCaseIsHeldByItsRolesUntilItIsHandedToOneTeacher() throws {
        func teacher(_ id: String, _ roles: Set<Teacher.Role>, grade: Int? = 1, classNumber: Int? = 3, school: String = "sa") -> Teacher {
            Teacher(schoolID: school, id: id, name: id, email: "\(id)@example.org", roles: roles, grade: grade, classNumber: classNumber)
        }
        let seat = (grade: 1, classNumber: 3)
        XCTAssertTrue(opened.isHeld(by: teacher("t-hr", [.homeroom]), seat: seat))
        XCTAssertFalse(opened.isHeld(by: teacher("t-hr2", [.homeroom], classNumber: 4), seat: seat), "another class's homeroom teacher")
        XCTAssertFalse(opened.isHeld(by: teacher("t-vd", [.volunteerDuty]), seat: seat), "the rule does not name volunteer duty")
        XCTAssertTrue(opened.isHeld(by: teacher("t-admin", [.admin], grade: nil, classNumber: nil), seat: seat))
        XCTAssertFalse(opened.isHeld(by: teacher("t-admin", [.admin], school: "sb"), seat: seat), "another school's admin")
        let handed = try opened.applying(.handOver(to: "t-vd")).get()
        XCTAssertTrue(handed.isHeld(by: teacher("t-vd", [.volunteerDuty]), seat: seat))
        XCTAssertFalse(handed.isHeld(by: teacher("t-hr", [.homeroom]), seat: seat), "handed over, it is one teacher's")
        XCTAssertEqual(handed.applying(.handOver(to: "t-vd")), .failure(.sameHolder("t-vd")))
    }

    func testARulesCaseHasOneIdWhereverItIsDecided() {
        let id = GuidanceCase.id(school: "sa", student: "s1312", ruleKey: "*/3/7", ordinal: 1)
        XCTAssertEqual(id, GuidanceCase.id(school: "sa", student: "s1312", ruleKey: "*/3/7", ordinal: 1))
        XCTAssertNotEqual(id, GuidanceCase.id(school: "sa", student: "s1312", ruleKey: "*/3/7", ordinal: 2))
        XCTAssertNotEqual(id, GuidanceCase.id(school: "sb", student: "s1312", ruleKey: "*/3/7", ordinal: 1), "two schools, one student id")
        XCTAssertTrue(RandomID.isUUID(id), id)
    }

    func testAStepTravelsAsItsEventSays() throws {
        let step = CaseStep(
            eventId: "6f1c7e1a-8d0b-4c55-9a43-0e6d1c5b7a21", caseId: opened.caseId, schoolId: "sa", grade: 1, studentId: "s1312",
            action: .move(.counselingPlanned, nextDate: "2026-12-03"), note: "점심시간 상담", by: "t-hr", at: "2026-12-01T01:00:00Z")
        XCTAssertEqual(try CaseStep(json: JSONFields(JSONReader.object(step.json))), step)
        let handed = CaseStep(
            eventId: "6f1c7e1a-8d0b-4c55-9a43-0e6d1c5b7a22", caseId: opened.caseId, schoolId: "sa", grade: 1, studentId: "s1312",
            action: .handOver(to: "t-vd"), note: nil, by: "t-hr", at: "2026-12-01T01:00:00Z")
        XCTAssertEqual(try CaseStep(json: JSONFields(JSONReader.object(handed.json))), handed)
        var wrong = String(decoding: step.json, as: UTF8.self)
        wrong = wrong.replacingOccurrences(of: "counseling-planned", with: "withdrawn")
        XCTAssertThrowsError(try CaseStep(json: JSONFields(JSONReader.object(Array(wrong.utf8))))) { error in
            XCTAssertEqual((error as? FieldError)?.field, "state")
        }
    }
}
