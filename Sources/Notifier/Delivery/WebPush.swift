import Common
import Crypto
import Guidance

/// The two pieces of Web Push that are cryptography: a message encrypted
/// for one browser (RFC 8291, the `aes128gcm` content coding of RFC 8188)
/// and the VAPID token that identifies this server to the push service
/// (RFC 8292). `PushChannel` sends them.
enum WebPush {
    /// The record size written in the header; one record holds every
    /// message this service sends (a push service takes at most 4,096 bytes).
    static let recordSize = 4096

    /// `plaintext` encrypted for the browser whose subscription gave
    /// `p256dh` (its public key) and `auth` (16 secret bytes). A fresh
    /// `salt` and `serverKey` for every message; tests pass the RFC's.
    /// Nil when the subscription's key is not a P-256 point, or the
    /// message does not fit one record.
    static func encrypt(
        _ plaintext: [UInt8], p256dh: [UInt8], auth: [UInt8], salt: [UInt8] = RandomID.bytes(16), serverKey: P256Key = .generate()
    ) -> [UInt8]? {
        guard plaintext.count + 17 <= recordSize, salt.count == 16, let browser = P256Key(publicKey: p256dh),
            let secret = serverKey.sharedSecret(with: browser)
        else { return nil }
        // RFC 8291 §3.4: the shared secret and the auth secret make the input key…
        let keyInfo = Array("WebPush: info".utf8) + [0] + browser.publicKey + serverKey.publicKey
        let inputKey = hkdf(salt: auth, secret: secret, info: keyInfo, length: 32)
        // …from which RFC 8188 §2.2 and §2.3 derive the content key and nonce.
        let contentKey = hkdf(salt: salt, secret: inputKey, info: Array("Content-Encoding: aes128gcm".utf8) + [0], length: 16)
        let nonce = hkdf(salt: salt, secret: inputKey, info: Array("Content-Encoding: nonce".utf8) + [0], length: 12)
        // One record, the last: the message and its delimiter 0x02, no padding.
        guard let sealed = AES128GCM.seal(plaintext + [2], key: contentKey, nonce: nonce) else { return nil }
        let size = UInt32(recordSize)
        let header = salt + [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
        return header + [UInt8(serverKey.publicKey.count)] + serverKey.publicKey + sealed
    }

    /// HKDF-SHA256 (RFC 5869) of at most one block: extract, then expand.
    private static func hkdf(salt: [UInt8], secret: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        let pseudorandomKey = HMAC.sha256(key: salt, message: secret)
        return Array(HMAC.sha256(key: pseudorandomKey, message: info + [1]).prefix(length))
    }

    /// The `Authorization` header for a push service at `audience` (the
    /// endpoint's origin): `vapid t=<JWT signed ES256>,k=<public key>`, the
    /// token valid until `expires` (Unix seconds, at most 24 hours ahead).
    /// Written without a space after the comma, as the reference library
    /// (`py_vapid`) writes and reads it.
    static func authorization(audience: String, subject: String, expires: Int, key: P256Key) -> String? {
        var claims = JSONWriter(capacity: 128)
        claims.field("aud", audience)
        claims.field("exp", expires)
        claims.field("sub", subject)
        let signed =
            RandomID.base64url(Array(#"{"typ":"JWT","alg":"ES256"}"#.utf8)) + "." + RandomID.base64url(claims.finish())
        guard let signature = key.signature(of: Array(signed.utf8)) else { return nil }
        return "vapid t=\(signed).\(RandomID.base64url(signature)),k=\(RandomID.base64url(key.publicKey))"
    }
}
