import CCrypto

/// A key on the NIST P-256 curve, from libcrypto: Elliptic-curve
/// Diffie-Hellman for Web Push's encryption (RFC 8291) and ES256 signatures
/// for its VAPID tokens (RFC 8292). Keys travel as the web does: a private
/// key as its 32-byte scalar, a public key as its 65-byte uncompressed point.
package final class P256Key: @unchecked Sendable {
    /// The `EVP_PKEY`; never changed after init, so shared across threads.
    private let key: OpaquePointer
    /// The uncompressed point: 0x04, then x and y of 32 bytes each.
    package let publicKey: [UInt8]
    /// The scalar, or nil for a peer's public key.
    package let privateKey: [UInt8]?

    /// A new private key from OpenSSL's generator.
    package static func generate() -> P256Key {
        while true {
            var scalar = [UInt8](repeating: 0, count: 32)
            scalar.withUnsafeMutableBytes(SecureRandom.fill)
            // Below the curve's order and not zero, all but always.
            if let key = P256Key(privateKey: scalar) { return key }
        }
    }

    /// The key of a 32-byte scalar; nil when it is none (zero, or not below the curve's order).
    package convenience init?(privateKey scalar: [UInt8]) {
        guard scalar.count == 32, let point = P256Key.point(of: scalar) else { return nil }
        self.init(public: point, private: scalar)
    }

    /// A peer's key of a 65-byte uncompressed point; nil when it is not a point on the curve.
    package convenience init?(publicKey point: [UInt8]) {
        guard point.count == 65, point[0] == 4 else { return nil }
        self.init(public: point, private: nil)
    }

    private init?(public point: [UInt8], private scalar: [UInt8]?) {
        guard let made = P256Key.evpKey(public: point, private: scalar) else { return nil }
        key = made
        publicKey = point
        privateKey = scalar
    }

    deinit { EVP_PKEY_free(key) }

    /// The 32-byte ECDH secret shared with `peer`; nil for a key without its private part.
    package func sharedSecret(with peer: P256Key) -> [UInt8]? {
        guard privateKey != nil, let context = EVP_PKEY_CTX_new(key, nil) else { return nil }
        defer { EVP_PKEY_CTX_free(context) }
        var secret = [UInt8](repeating: 0, count: 32)
        var length = 32
        guard EVP_PKEY_derive_init(context) == 1, EVP_PKEY_derive_set_peer(context, peer.key) == 1,
            EVP_PKEY_derive(context, &secret, &length) == 1, length == 32
        else { return nil }
        return secret
    }

    /// An ES256 signature of `message` (SHA-256, then ECDSA) as JOSE writes
    /// it: r and s of 32 bytes each, not DER. Nil for a key without its private part.
    package func signature(of message: [UInt8]) -> [UInt8]? {
        guard privateKey != nil, let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context) }
        var der = [UInt8](repeating: 0, count: 80)
        var length = der.count
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1,
            EVP_DigestSign(context, &der, &length, message, message.count) == 1
        else { return nil }
        return der.withUnsafeBufferPointer { buffer -> [UInt8]? in
            var start = buffer.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &start, length) else { return nil }
            defer { ECDSA_SIG_free(signature) }
            var r: OpaquePointer?
            var s: OpaquePointer?
            ECDSA_SIG_get0(signature, &r, &s)
            var joined = [UInt8](repeating: 0, count: 64)
            guard BN_bn2binpad(r, &joined, 32) == 32,
                joined.withUnsafeMutableBufferPointer({ BN_bn2binpad(s, $0.baseAddress! + 32, 32) }) == 32
            else { return nil }
            return joined
        }
    }

    /// The public point of a scalar: scalar × the curve's generator.
    private static func point(of scalar: [UInt8]) -> [UInt8]? {
        guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else { return nil }
        defer { EC_GROUP_free(group) }
        guard let number = BN_bin2bn(scalar, 32, nil) else { return nil }
        defer { BN_clear_free(number) }
        guard !BN_is_zero(number).isTrue, BN_cmp(number, EC_GROUP_get0_order(group)) < 0, let point = EC_POINT_new(group) else {
            return nil
        }
        defer { EC_POINT_free(point) }
        var bytes = [UInt8](repeating: 0, count: 65)
        guard EC_POINT_mul(group, point, number, nil, nil, nil) == 1,
            EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, &bytes, 65, nil) == 65
        else { return nil }
        return bytes
    }

    /// The `EVP_PKEY` of a point and, if given, its scalar. OpenSSL refuses
    /// a point that is not on the curve.
    private static func evpKey(public point: [UInt8], private scalar: [UInt8]?) -> OpaquePointer? {
        guard let builder = OSSL_PARAM_BLD_new() else { return nil }
        defer { OSSL_PARAM_BLD_free(builder) }
        let number = scalar.flatMap { BN_bin2bn($0, 32, nil) }
        defer { BN_clear_free(number) }
        // The builder keeps pointers to the curve's name and the point
        // until `to_param` copies them: both must live until then (and the
        // parameters' names for good: the shim's constants).
        return "prime256v1".withCString { curve in
            point.withUnsafeBytes { bytes -> OpaquePointer? in
                guard OSSL_PARAM_BLD_push_utf8_string(builder, guidance_param_group, curve, 0) == 1,
                    OSSL_PARAM_BLD_push_octet_string(builder, guidance_param_public, bytes.baseAddress, bytes.count) == 1,
                    number.map({ OSSL_PARAM_BLD_push_BN(builder, guidance_param_private, $0) == 1 }) ?? true,
                    let parameters = OSSL_PARAM_BLD_to_param(builder)
                else { return nil }
                defer { OSSL_PARAM_free(parameters) }
                guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { return nil }
                defer { EVP_PKEY_CTX_free(context) }
                var key: OpaquePointer?
                guard EVP_PKEY_fromdata_init(context) == 1,
                    EVP_PKEY_fromdata(context, &key, scalar == nil ? guidance_public_key : guidance_key_pair, parameters) == 1
                else { return nil }
                return key
            }
        }
    }
}

extension Int32 {
    fileprivate var isTrue: Bool { self != 0 }
}

/// AES-128-GCM from libcrypto, as Web Push's `aes128gcm` content coding (RFC 8188) uses it.
package enum AES128GCM {
    /// `plaintext` sealed with a 16-byte key and a 12-byte nonce: the
    /// ciphertext, then the 16-byte tag. Nil only when libcrypto fails.
    package static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8]) -> [UInt8]? {
        precondition(key.count == 16 && nonce.count == 12, "AES-128-GCM takes a 16-byte key and a 12-byte nonce")
        guard let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        var sealed = [UInt8](repeating: 0, count: plaintext.count + 16)
        var written: Int32 = 0
        var last: Int32 = 0
        guard EVP_EncryptInit_ex(context, EVP_aes_128_gcm(), nil, key, nonce) == 1,
            EVP_EncryptUpdate(context, &sealed, &written, plaintext, Int32(plaintext.count)) == 1,
            sealed.withUnsafeMutableBufferPointer({ EVP_EncryptFinal_ex(context, $0.baseAddress! + Int(written), &last) }) == 1,
            Int(written + last) == plaintext.count,
            sealed.withUnsafeMutableBufferPointer({
                EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, $0.baseAddress! + plaintext.count)
            }) == 1
        else { return nil }
        return sealed
    }
}
