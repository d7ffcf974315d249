import CCrypto

/// Random bytes from OpenSSL's generator: seeded from the kernel, then drawn
/// in user space (a `getrandom` call per 8 bytes, as the standard library's
/// generator makes, costs a system call each).
package enum SecureRandom {
    package static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        // RAND_bytes fails only when the generator cannot be seeded; the
        // kernel's generator then, one call per 8 bytes.
        if RAND_bytes(base.assumingMemoryBound(to: UInt8.self), Int32(buffer.count)) != 1 {
            var generator = SystemRandomNumberGenerator()
            for offset in 0..<buffer.count { buffer[offset] = generator.next() }
        }
    }
}
