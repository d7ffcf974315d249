import Access
import Common
import Crypto
import Guidance
import HTTP
import Sessions
import Store

/// 설정: each teacher's own choices, and the devices they turned push on for.
extension NotifierHandlers {
    /// `{"teacherId", "emailLists", "listTime", "schoolTime", "quietFrom",
    /// "quietUntil", "pushKey", "pushDevices"}`. `listTime` null: the
    /// school's time; `quietFrom`/`quietUntil`: the teacher's quiet hours,
    /// else the service's (`QUIET_HOURS`), null: none;
    /// `pushKey` null: push is not set up on this server. The teacher or an
    /// admin of the school reads it; the teacher alone changes it.
    @Sendable func settings(_ request: Request, _ caller: Caller) async throws -> Response {
        let teacherID = request.parameter("teacherId")
        try mayReadInbox(caller, of: teacherID)
        let (store, school) = (self.store, caller.roster.teachers[teacherID]?.schoolID ?? "")
        let (settings, devices) = try await store.blocking {
            (
                try store.teacherSettings(school: school, teacher: teacherID),
                try store.pushSubscriptions(school: school, teacher: teacherID).count
            )
        }
        return .json(written: settingsJSON(teacherID, settings, school: caller.roster.school(school), devices: devices))
    }

    /// Changes the fields the body names and keeps the others: `emailLists`
    /// (true/false), `listTime` (`HH:MM` after the school's time and outside
    /// quiet hours, or null), `quietFrom` and `quietUntil` together
    /// (`HH:MM`, different; both null: none).
    @Sendable func changeSettings(_ request: Request, _ caller: Caller) async throws -> Response {
        let teacherID = request.parameter("teacherId")
        try mayReadInbox(caller, of: teacherID)
        if let teacher = caller.teacher, teacher.id != teacherID {
            throw HTTPError(status: 403, detail: "each teacher chooses their own settings")
        }
        let schoolID = caller.roster.teachers[teacherID]?.schoolID ?? ""
        guard let school = caller.roster.school(schoolID) else { throw HTTPError.notFound("unknown teacher '\(teacherID)'") }
        let store = self.store
        var settings = try await store.blocking { try store.teacherSettings(school: schoolID, teacher: teacherID) }
        try request.json { (body) throws(FieldError) in
            try NotifierHandlers.change(&settings, by: body, quietByDefault: quietHours)
        }
        // Messages held under the old settings are held by the new ones.
        let (now, quietByDefault) = (clock(), quietHours)
        try await store.blocking { [settings] in
            try store.setTeacherSettings(settings, school: schoolID, teacher: teacherID, now: now) { scope, date, urgent in
                settings.release(scope: scope, date: date, urgent: urgent, school: school, now: now, quietByDefault: quietByDefault)
            }
        }
        logger.info(
            "teacher settings changed",
            [
                "requestId": request.requestID, "teacher": teacherID, "emailLists": String(settings.emailLists),
                "listTime": settings.listMinute.map(Roster.clock) ?? "school",
                "quietHours": settings.quietHours?.text ?? "default"
            ])
        let devices = try await store.blocking { try store.pushSubscriptions(school: schoolID, teacher: teacherID).count }
        return .json(written: settingsJSON(teacherID, settings, school: school, devices: devices))
    }

    static func change(_ settings: inout TeacherSettings, by body: JSONFields, quietByDefault: QuietHours?)
        throws(FieldError)
    {
        if body.object["emailLists"] != nil { settings.emailLists = try body.boolean("emailLists") }
        let hasFrom = body.object["quietFrom"] != nil
        if hasFrom != (body.object["quietUntil"] != nil) {
            throw FieldError(field: hasFrom ? "quietUntil" : "quietFrom", message: "is required with the other end of the quiet hours")
        }
        if hasFrom {
            let from = try body.optionalString("quietFrom")
            let until = try body.optionalString("quietUntil")
            switch (from, until) {
            case (nil, nil):
                settings.quietHours = QuietHours.none
            case (let from?, let until?):
                guard let start = Roster.minuteOfDay(from) else { throw FieldError(field: "quietFrom", message: "must be HH:MM") }
                guard let end = Roster.minuteOfDay(until) else { throw FieldError(field: "quietUntil", message: "must be HH:MM") }
                guard start != end else {
                    throw FieldError(field: "quietUntil", message: "must differ from quietFrom; both null turn quiet hours off")
                }
                settings.quietHours = QuietHours(from: start, until: end)
            default:
                throw FieldError(field: from == nil ? "quietFrom" : "quietUntil", message: "is null while the other is not")
            }
        }
        if body.object["listTime"] != nil {
            if let text = try body.optionalString("listTime") {
                guard let minute = Roster.minuteOfDay(text) else { throw FieldError(field: "listTime", message: "must be HH:MM, or null") }
                settings.listMinute = minute
            } else {
                settings.listMinute = nil
            }
        }
        let quiet = settings.quietHours ?? quietByDefault ?? .none
        if let minute = settings.listMinute, quiet.contains(minute) {
            throw FieldError(field: "listTime", message: "\(Roster.clock(minute)) falls in the quiet hours (\(quiet.text))")
        }
    }

    private func settingsJSON(_ teacherID: String, _ settings: TeacherSettings, school: School?, devices: Int) -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.field("teacherId", teacherID)
        writer.field("emailLists", settings.emailLists)
        writer.field("listTime", settings.listMinute.map(Roster.clock))
        writer.field("schoolTime", school.map { Roster.clock($0.digestMinute) })
        let quiet = settings.quietHours ?? quietHours ?? .none
        writer.field("quietFrom", quiet.isNone ? nil : Roster.clock(quiet.from))
        writer.field("quietUntil", quiet.isNone ? nil : Roster.clock(quiet.until))
        writer.field("pushKey", push?.publicKey)
        writer.field("pushDevices", devices)
        return writer.finish()
    }

    /// Turns push on for the calling device: `{"endpoint", "keys": {"p256dh",
    /// "auth"}}`, the browser's `PushSubscription.toJSON()`. Only the
    /// teacher, signed in on that device: the subscription lives as long as
    /// the session (signing out, or being signed out everywhere, drops it).
    @Sendable func subscribe(_ request: Request, _ caller: Caller) async throws -> Response {
        let teacherID = request.parameter("teacherId")
        let (session, school) = try pushCaller(caller, teacherID)
        let (subscription, host) = try request.json { (body) throws(FieldError) -> (PushSubscription, String) in
            let endpoint = try body.string("endpoint")
            guard let host = PushChannel.endpointHost(endpoint, overHTTP: pushOverHTTP) else {
                throw FieldError(field: "endpoint", message: "must be the push service's https URL (a name, no port or user)")
            }
            let keys = try body.object("keys")
            let p256dh = try keys.string("p256dh")
            guard let point = RandomID.unbase64url(p256dh), P256Key(publicKey: point) != nil else {
                throw FieldError(field: "keys.p256dh", message: "must be a P-256 public key, base64url of its 65-byte point")
            }
            let auth = try keys.string("auth")
            guard RandomID.unbase64url(auth)?.count == 16 else {
                throw FieldError(field: "keys.auth", message: "must be base64url of 16 bytes")
            }
            let subscription = PushSubscription(
                endpoint: endpoint, schoolId: school, teacherId: teacherID, p256dh: p256dh, auth: auth, sessionHash: session.hash,
                sessionSeen: session.seen, renewedMs: session.renewedAt, createdAt: Timestamp.format(clock()))
            return (subscription, host)
        }
        // A name that resolves into the service's own network is no push
        // service; one that does not resolve now is checked at each connection.
        let loopback = pushOverHTTP
        if await PublicAddress.lookups.run(within: .seconds(5), { PublicAddress.resolvesAllowed(host, loopback: loopback) }) == false {
            throw HTTPError(FieldError(field: "endpoint", message: "names an address that is not on the public internet"))
        }
        let store = self.store
        try await store.blocking { try store.savePushSubscription(subscription) }
        logger.info("push turned on for a device", ["requestId": request.requestID, "teacher": teacherID])
        return .noContent
    }

    /// Turns push off for a device: `{"endpoint"}`. Signing out does it too.
    @Sendable func unsubscribe(_ request: Request, _ caller: Caller) async throws -> Response {
        let teacherID = request.parameter("teacherId")
        let (_, school) = try pushCaller(caller, teacherID)
        let endpoint = try request.json { (body) throws(FieldError) in try body.string("endpoint") }
        let store = self.store
        _ = try await store.blocking { try store.removePushSubscriptions(school: school, teacher: teacherID, endpoint: endpoint) }
        logger.info("push turned off for a device", ["requestId": request.requestID, "teacher": teacherID])
        return .noContent
    }

    /// The session and school of a teacher changing their own devices.
    private func pushCaller(_ caller: Caller, _ teacherID: String) throws(HTTPError) -> (Session, String) {
        guard push != nil else { throw HTTPError.notFound("push is not set up on this server (VAPID_PRIVATE_KEY)") }
        guard let teacher = caller.teacher, teacher.id == teacherID else {
            throw HTTPError(status: 403, detail: "each teacher turns push on and off for their own devices")
        }
        guard let session = caller.session else {
            throw HTTPError(status: 403, detail: "push is turned on from the app on a signed-in device, not with a token")
        }
        return (session, teacher.schoolID)
    }
}
