// What a digest run decides deliveries by: the teachers' settings and devices.

/// The settings a digest run decides deliveries by.
package struct DeliveryPreferences: Sendable {
    /// Teachers who changed a setting; the others have the defaults.
    package var settings: [String: TeacherSettings] = [:]
    /// Teachers with at least one device to push to.
    package var pushing: Set<String> = []

    package init() {}

    package func of(_ teacher: String) -> TeacherSettings { settings[teacher] ?? .standard }
}

/// A device's Web Push subscription (the browser's `PushSubscription`), bound to a session.
package struct PushSubscription: Sendable, Equatable {
    /// The push service's URL for this device.
    package let endpoint: String
    package let schoolId: String
    package let teacherId: String
    /// The browser's P-256 public key and auth secret, base64url.
    package let p256dh: String
    package let auth: String
    /// The session that turned it on (`Session.hash`), how far its replica
    /// had read the session log then, and when it was last renewed.
    package let sessionHash: String
    package let sessionSeen: Int64?
    package let renewedMs: Int64
    package let createdAt: String

    package init(
        endpoint: String, schoolId: String, teacherId: String, p256dh: String, auth: String, sessionHash: String, sessionSeen: Int64?,
        renewedMs: Int64, createdAt: String
    ) {
        self.endpoint = endpoint
        self.schoolId = schoolId
        self.teacherId = teacherId
        self.p256dh = p256dh
        self.auth = auth
        self.sessionHash = sessionHash
        self.sessionSeen = sessionSeen
        self.renewedMs = renewedMs
        self.createdAt = createdAt
    }
}
