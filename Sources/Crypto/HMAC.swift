import CCrypto

/// HMAC-SHA256 from libcrypto, for signing webhooks.
package enum HMAC {
    package static func sha256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { messageBytes in
                CCrypto.HMAC(
                    EVP_sha256(), keyBytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(keyBytes.count),
                    messageBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), messageBytes.count, &mac, &length)
            }
        }
        // HMAC fails only when allocation fails.
        precondition(result != nil, "HMAC-SHA256 failed")
        return Array(mac.prefix(Int(length)))
    }
}
