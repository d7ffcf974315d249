import Common
import Foundation
import Guidance
import Kafka
import Store

/// Turns consumed messages into store events, or says why it cannot.
struct EventDecoder: Sendable {
    let roster: Roster
    let topics: Topics
    private static let decoder = JSONDecoder()

    private struct Envelope: Decodable {
        let schemaVersion: Int
        let type: String
    }

    func decode(_ message: ConsumedMessage) -> Result<StoredEvent, DecodeFailure> {
        // The common case in one pass: the event type the topic carries, read
        // by JSONReader when plain, by JSONDecoder otherwise.
        let fields = JSONReader.object(message.value)
        if message.topic == topics.registered,
           let event = fields.flatMap(GuidanceRegistered.init(plain:))
               ?? (try? EventDecoder.decoder.decode(GuidanceRegistered.self, from: Data(message.value))),
           event.schemaVersion == 1, event.type == .registered {
            return registered(event)
        }
        if message.topic == topics.deleted,
           let event = fields.flatMap(GuidanceDeleted.init(plain:))
               ?? (try? EventDecoder.decoder.decode(GuidanceDeleted.self, from: Data(message.value))),
           event.schemaVersion == 1, event.type == .deleted {
            return .success(.deleted(
                guidanceId: event.guidanceId.lowercased(), schoolId: event.schoolId, grade: event.grade,
                deletedBy: event.deletedBy, occurredAt: event.occurredAt))
        }
        return diagnose(message)
    }

    private func registered(_ event: GuidanceRegistered) -> Result<StoredEvent, DecodeFailure> {
        guard let occurred = Timestamp.parse(event.occurredAt) else {
            return .failure(DecodeFailure(reason: "occurredAt '\(event.occurredAt)' is not RFC 3339"))
        }
        guard let school = roster.school(event.schoolId) else {
            return .failure(DecodeFailure(reason: "unknown school '\(event.schoolId)'"))
        }
        return .success(.registered(GuidanceRecord(
            guidanceId: event.guidanceId.lowercased(), schoolId: event.schoolId,
            date: Timestamp.localDate(occurred, in: school.timeZone), student: event.student, reason: event.reason,
            occurredAt: Timestamp.format(occurred), recordedBy: event.recordedBy)))
    }

    /// Why a message is not a valid event, for its dead letter.
    private func diagnose(_ message: ConsumedMessage) -> Result<StoredEvent, DecodeFailure> {
        let envelope: Envelope
        do {
            envelope = try EventDecoder.decoder.decode(Envelope.self, from: Data(message.value))
        } catch {
            return .failure(DecodeFailure(reason: "not a guidance event: \(EventDecoder.describe(error))"))
        }
        guard envelope.schemaVersion == 1 else {
            return .failure(DecodeFailure(reason: "unsupported schemaVersion \(envelope.schemaVersion)"))
        }
        let expected = message.topic == topics.registered ? EventType.registered : message.topic == topics.deleted ? EventType.deleted : nil
        guard let expected, envelope.type == expected.rawValue else {
            return .failure(DecodeFailure(reason: "event type '\(envelope.type)' does not belong on \(message.topic)"))
        }
        do {
            switch expected {
            case .registered:
                _ = try EventDecoder.decoder.decode(GuidanceRegistered.self, from: Data(message.value))
            case .deleted:
                _ = try EventDecoder.decoder.decode(GuidanceDeleted.self, from: Data(message.value))
            }
            return .failure(DecodeFailure(reason: "the event is valid but could not be applied"))
        } catch {
            return .failure(DecodeFailure(reason: EventDecoder.describe(error)))
        }
    }

    private static func describe(_ error: Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            "missing field '\((context.codingPath + [key]).map(\.stringValue).joined(separator: "."))'"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "field '\(context.codingPath.map(\.stringValue).joined(separator: "."))' has the wrong type"
        case DecodingError.dataCorrupted(let context):
            context.codingPath.isEmpty ? "malformed JSON" : "field '\(context.codingPath.map(\.stringValue).joined(separator: "."))' is invalid"
        default:
            "\(error)"
        }
    }
}

struct DecodeFailure: Error, Sendable {
    let reason: String
}
