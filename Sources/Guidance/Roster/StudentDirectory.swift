/// Every school's students, packed for a district: seats are 64-bit keys, the
/// strings share one UTF-8 buffer, and a photo URL is stored as an index to
/// its directory (`https://…/school-001/`, shared by a school's students) and
/// its file name. Once loaded, the records are in seat order, so a school's
/// and a class's students are each one run of them: a seat is its class's
/// run plus its number, without the seat dictionary only loading needs (to
/// refuse a taken seat at its row), which cost 3 MB of the district's 14
/// (185,000 students; a dictionary of `Student` values took about 80).
struct StudentDirectory: Sendable {
    private struct Span: Sendable {
        let offset: UInt32
        let length: UInt32
    }

    private struct Record: Sendable {
        let school: UInt16
        let grade: UInt16
        let classNumber: UInt16
        let number: UInt16
        let id: Span
        let name: Span
        let photoDirectory: UInt32
        let photoFile: Span
    }

    private var schoolIDs: [String] = []
    private var schoolIndex: [String: UInt16] = [:]
    /// In seat order once loaded (in the file's order while loading).
    private var records: [Record] = []
    /// Once loaded: each school's run of records, by school number.
    private var schoolRuns: [Range<UInt32>] = []
    /// Once loaded: each class's run of records, by its seat with number 0.
    /// A search of the whole district for a seat took 17 steps, most of
    /// them a cache miss: about 1 µs of each registration.
    private var classRuns: [UInt64: Range<UInt32>] = [:]
    private var photoDirectories: [Span] = []
    private var text: [UInt8] = []
    /// Hash of school and student id → record: an id listed twice is found
    /// while loading, and the notifier finds an event's student by its id.
    private var ids: [UInt64: UInt32] = [:]
    // Needed only while the roster is read; `finishLoading` lets them go.
    private var isLoading = true
    private var seatIndex: [UInt64: UInt32] = [:]
    private var photoDirectoryIndex: [String: UInt32] = [:]

    /// Room for `capacity` students whose strings take at most `textBytes`.
    init(capacity: Int, textBytes: Int) {
        seatIndex.reserveCapacity(capacity)
        ids.reserveCapacity(capacity)
        records.reserveCapacity(capacity)
        text.reserveCapacity(textBytes)
    }

    var count: Int { records.count }

    /// How many students `school` has here (once loaded).
    func count(school: String) -> Int { schoolIndex[school].map { schoolRuns[Int($0)].count } ?? 0 }

    /// One school's students, loaded: a roster version's, kept beside the
    /// folder's directory so that applying it rebuilds that school alone.
    static func school(_ students: [Student]) throws(Conflict) -> StudentDirectory {
        var directory = StudentDirectory(capacity: students.count, textBytes: students.count * 64)
        for student in students { try directory.insert(student) }
        directory.finishLoading()
        return directory
    }

    enum Conflict: Error {
        /// The student id is already listed in that school.
        case idListedTwice
        /// Another student, with this id, has the seat.
        case seatTaken(String)
        /// More schools than a record can name.
        case tooManySchools
    }

    /// Adds a student, unless its id or seat is taken. Only before
    /// `finishLoading`.
    mutating func insert(_ student: Student) throws(Conflict) {
        precondition(isLoading, "StudentDirectory.insert after finishLoading")
        guard schoolIndex[student.schoolID] != nil || schoolIDs.count <= Int(UInt16.max) else { throw .tooManySchools }
        let school = index(of: student.schoolID)
        let seat = StudentDirectory.seat(school, student.grade, student.classNumber, student.number)
        let idKey = StudentDirectory.idKey(school, student.id)
        if let existing = ids[idKey] {
            // Equal hashes: compare the ids themselves, all of the school's on
            // the (vanishingly rare) collision of different ids.
            let same =
                string(records[Int(existing)].id) == student.id
                || records.contains { $0.school == school && string($0.id) == student.id }
            if same { throw .idListedTwice }
        }
        if let existing = seatIndex[seat] { throw .seatTaken(string(records[Int(existing)].id)) }
        ids[idKey] = UInt32(records.count)
        seatIndex[seat] = UInt32(records.count)
        let url = student.photoURL.utf8
        let fileStart = url.lastIndex(of: UInt8(ascii: "/")).map(url.index(after:)) ?? url.startIndex
        let directory = String(student.photoURL[..<fileStart])
        let directoryIndex: UInt32
        if let known = photoDirectoryIndex[directory] {
            directoryIndex = known
        } else {
            directoryIndex = UInt32(photoDirectories.count)
            photoDirectories.append(append(directory))
            photoDirectoryIndex[directory] = directoryIndex
        }
        records.append(
            Record(
                school: school, grade: UInt16(student.grade), classNumber: UInt16(student.classNumber), number: UInt16(student.number),
                id: append(student.id), name: append(student.name),
                photoDirectory: directoryIndex, photoFile: append(String(student.photoURL[fileStart...]))))
    }

    /// Puts the records in seat order and drops what only loading needs; the
    /// directory is read-only afterwards.
    mutating func finishLoading() {
        isLoading = false
        seatIndex = [:]
        photoDirectoryIndex = [:]
        records.sort { StudentDirectory.seat(of: $0) < StudentDirectory.seat(of: $1) }
        // The records moved: each id's slot names its record's new place
        // (of two ids with one hash, one holds the slot; `student(school:id:)`
        // finds the other by its id).
        ids.removeAll(keepingCapacity: true)
        schoolRuns = Array(repeating: 0..<0, count: schoolIDs.count)
        classRuns = [:]
        for (index, record) in records.enumerated() {
            ids[StudentDirectory.idKey(record.school, string(record.id))] = UInt32(index)
            let position = UInt32(index)
            let school = Int(record.school)
            schoolRuns[school] = schoolRuns[school].isEmpty ? position..<position + 1 : schoolRuns[school].lowerBound..<position + 1
            let classSeat = StudentDirectory.seat(record.school, Int(record.grade), Int(record.classNumber), 0)
            classRuns[classSeat] = (classRuns[classSeat]?.lowerBound ?? position)..<position + 1
        }
    }

    func student(school: String, grade: Int, classNumber: Int, number: Int) -> Student? {
        guard let run = classRun(school: school, grade: grade, classNumber: classNumber), Student.seatRange.contains(number) else {
            return nil
        }
        // Numbers usually run 1, 2, 3… without gaps: try the place that gives first.
        let guess = Int(run.lowerBound) + number - 1
        if run.contains(UInt32(clamping: guess)), records[guess].number == number { return student(at: UInt32(guess)) }
        var (low, high) = (Int(run.lowerBound), Int(run.upperBound))
        while low < high {
            let middle = (low + high) / 2
            if Int(records[middle].number) < number { low = middle + 1 } else { high = middle }
        }
        guard low < run.upperBound, records[low].number == number else { return nil }
        return student(at: UInt32(low))
    }

    /// The class's students in number order; empty when there is no such class.
    func students(school: String, grade: Int, classNumber: Int) -> [Student] {
        guard let run = classRun(school: school, grade: grade, classNumber: classNumber) else { return [] }
        return run.map(student(at:))
    }

    private func classRun(school: String, grade: Int, classNumber: Int) -> Range<UInt32>? {
        precondition(!isLoading, "StudentDirectory read before finishLoading")
        guard let school = schoolIndex[school], Student.seatRange.contains(grade), Student.seatRange.contains(classNumber) else {
            return nil
        }
        return classRuns[StudentDirectory.seat(school, grade, classNumber, 0)]
    }

    /// The student of `school` with `id`, wherever they sit now.
    func student(school: String, id: String) -> Student? {
        guard let schoolNumber = schoolIndex[school] else { return nil }
        if let index = ids[StudentDirectory.idKey(schoolNumber, id)], string(records[Int(index)].id) == id {
            return student(at: index)
        }
        // Two ids of one hash: the later one holds the slot.
        guard let index = records.firstIndex(where: { $0.school == schoolNumber && string($0.id) == id }) else { return nil }
        return student(at: UInt32(index))
    }

    private func student(at index: UInt32) -> Student {
        let record = records[Int(index)]
        return Student(
            schoolID: schoolIDs[Int(record.school)], id: string(record.id), grade: Int(record.grade),
            classNumber: Int(record.classNumber), number: Int(record.number), name: string(record.name),
            photoURL: string(photoDirectories[Int(record.photoDirectory)]) + string(record.photoFile))
    }

    /// The school's seats as grade → class → numbers, each level sorted.
    func seats(school: String) -> [(grade: Int, classes: [(classNumber: Int, numbers: [Int])])] {
        guard let school = schoolIndex[school] else { return [] }
        // The school's records are in seat order: each grade and each class is one run.
        var grades: [(grade: Int, classes: [(classNumber: Int, numbers: [Int])])] = []
        for index in schoolRuns[Int(school)] {
            let record = records[Int(index)]
            let (grade, classNumber) = (Int(record.grade), Int(record.classNumber))
            if grades.last?.grade != grade { grades.append((grade, [])) }
            let g = grades.count - 1
            if grades[g].classes.last?.classNumber != classNumber { grades[g].classes.append((classNumber, [])) }
            grades[g].classes[grades[g].classes.count - 1].numbers.append(Int(record.number))
        }
        return grades
    }

    private mutating func index(of school: String) -> UInt16 {
        if let index = schoolIndex[school] { return index }
        let index = UInt16(schoolIDs.count)
        schoolIDs.append(school)
        schoolIndex[school] = index
        return index
    }

    private mutating func append(_ value: String) -> Span {
        let span = Span(offset: UInt32(text.count), length: UInt32(value.utf8.count))
        text.append(contentsOf: value.utf8)
        return span
    }

    private func string(_ span: Span) -> String {
        String(decoding: text[Int(span.offset)..<Int(span.offset + span.length)], as: UTF8.self)
    }

    private static func idKey(_ school: UInt16, _ id: String) -> UInt64 {
        var hasher = Hasher()
        hasher.combine(school)
        hasher.combine(id)
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }

    private static func seat(_ school: UInt16, _ grade: Int, _ classNumber: Int, _ number: Int) -> UInt64 {
        UInt64(school) << 48 | UInt64(grade) << 32 | UInt64(classNumber) << 16 | UInt64(number)
    }

    private static func seat(of record: Record) -> UInt64 {
        seat(record.school, Int(record.grade), Int(record.classNumber), Int(record.number))
    }
}
