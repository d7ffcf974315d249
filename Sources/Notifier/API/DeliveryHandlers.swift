import Access
import Common
import Guidance
import HTTP
import Store

/// The operators' view of the outbox: a school's deliveries, and sending a
/// failed one again. Admins of the school only (anyone when authentication is off).
struct DeliveryHandlers: Sendable {
    let store: SQLStore
    let clock: @Sendable () -> Double
    let logger: Logger

    func routes(into router: inout GuardedRouter) {
        router.get("/v1/schools/{schoolId}/deliveries", .school(roles: [.admin]), list)
        router.post("/v1/schools/{schoolId}/deliveries/{deliveryId}/retry", .school(roles: [.admin]), retry)
    }

    struct Item: Encodable, Sendable {
        let deliveryId: String
        let digestId: String
        let teacherId: String
        /// The roster's name for the teacher, for the admin's page; null when the roster no longer lists them.
        let teacherName: String?
        let channel: Channel
        let target: String
        let status: Delivery.Status
        let attempts: Int
        let lastError: String?
        let nextAttemptAt: String?
        let sentAt: String?

        init(_ delivery: Delivery, teacherName: String?) {
            deliveryId = delivery.deliveryId
            digestId = delivery.digestId
            teacherId = delivery.teacherId
            self.teacherName = teacherName
            channel = delivery.channel
            target = delivery.target
            status = delivery.status
            attempts = delivery.attempts
            lastError = delivery.lastError
            nextAttemptAt = delivery.nextAttemptAt.map(Timestamp.format)
            sentAt = delivery.sentAt.map(Timestamp.format)
        }

        /// Absent values are written as `null`, as the contract shows.
        func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(deliveryId, forKey: .deliveryId)
            try container.encode(digestId, forKey: .digestId)
            try container.encode(teacherId, forKey: .teacherId)
            try container.encode(teacherName, forKey: .teacherName)
            try container.encode(channel, forKey: .channel)
            try container.encode(target, forKey: .target)
            try container.encode(status, forKey: .status)
            try container.encode(attempts, forKey: .attempts)
            try container.encode(lastError, forKey: .lastError)
            try container.encode(nextAttemptAt, forKey: .nextAttemptAt)
            try container.encode(sentAt, forKey: .sentAt)
        }

        enum CodingKeys: String, CodingKey {
            case deliveryId, digestId, teacherId, teacherName, channel, target, status, attempts, lastError, nextAttemptAt, sentAt
        }
    }

    struct List: Encodable, Sendable {
        let items: [Item]
    }

    @Sendable func list(_ request: Request, _ caller: Caller) async throws -> Response {
        let schoolID = try caller.school(of: request).id
        let text = request.query["status"]
        let status = text.flatMap(Delivery.Status.init(rawValue:))
        if text != nil && status == nil {
            throw HTTPError(FieldError(field: "status", message: "must be one of pending, sent, failed"))
        }
        let limit = try request.integerQuery("limit", in: 1...1000) ?? 100
        let store = self.store
        let deliveries = try await store.blocking { try store.deliveries(school: schoolID, status: status, limit: limit) }
        let roster = caller.roster
        return .json(List(items: deliveries.map { Item($0, teacherName: roster.teachers[$0.teacherId]?.name) }))
    }

    struct Requeued: Encodable, Sendable {
        let deliveryId: String
        let status: Delivery.Status
    }

    @Sendable func retry(_ request: Request, _ caller: Caller) async throws -> Response {
        let schoolID = try caller.school(of: request).id
        let deliveryID = request.parameter("deliveryId")
        let store = self.store
        let now = clock()
        let result = try await store.blocking { try store.requeue(school: schoolID, deliveryId: deliveryID, now: now) }
        switch result {
        case .requeued:
            logger.info("delivery queued again by hand", ["delivery": deliveryID, "by": caller.teacher?.id ?? "(authentication off)"])
            return .json(Requeued(deliveryId: deliveryID, status: .pending), status: 202)
        case .notFound:
            throw HTTPError.notFound("school \(schoolID) has no delivery \(deliveryID)")
        case .notFailed(let status):
            throw HTTPError(status: 409, detail: "delivery \(deliveryID) is \(status.rawValue); only a failed delivery is queued again")
        }
    }
}
