// Images for tests: a PNG writer (a school-size photo without any real person) and a JPEG's size.

/// The width and height a JPEG's frame header (SOF0–SOF2) gives.
package func jpegSize(_ bytes: [UInt8]) -> (width: Int, height: Int)? {
    var at = 2
    while at + 9 < bytes.count, bytes[at] == 0xFF {
        let marker = bytes[at + 1]
        let length = Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
        if (0xC0...0xC2).contains(marker) {
            return (Int(bytes[at + 7]) << 8 | Int(bytes[at + 8]), Int(bytes[at + 5]) << 8 | Int(bytes[at + 6]))
        }
        at += 2 + length
    }
    return nil
}

/// A PNG writer for tests: RGB, stored (uncompressed) deflate blocks.
package enum PNG {
    package static func noisy(width: Int, height: Int, comment: String? = nil) -> [UInt8] {
        var raw: [UInt8] = []
        raw.reserveCapacity((width * 3 + 1) * height)
        var seed: UInt32 = 2_463_534_242
        for y in 0..<height {
            raw.append(0)
            for x in 0..<width {
                seed ^= seed << 13
                seed ^= seed >> 17
                seed ^= seed << 5
                let noise = UInt8(truncatingIfNeeded: seed) & 0x3F
                raw += [UInt8(truncatingIfNeeded: x * 255 / width) &+ noise, UInt8(truncatingIfNeeded: y * 255 / height), 160 &+ noise]
            }
        }
        var zlib: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let count = min(65_535, raw.count - offset)
            zlib.append(offset + count == raw.count ? 1 : 0)
            zlib += [UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8((~count >> 8) & 0xFF)]
            zlib += raw[offset..<offset + count]
            offset += count
        } while offset < raw.count
        var (a, b): (UInt32, UInt32) = (1, 0)
        for byte in raw {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        zlib += bigEndian(b << 16 | a)
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        png += chunk("IHDR", bigEndian(UInt32(width)) + bigEndian(UInt32(height)) + [8, 2, 0, 0, 0])
        if let comment { png += chunk("tEXt", Array("Comment".utf8) + [0] + Array(comment.utf8)) }
        png += chunk("IDAT", zlib) + chunk("IEND", [])
        return png
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in body {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
        }
        return bigEndian(UInt32(data.count)) + body + bigEndian(~crc)
    }
}
