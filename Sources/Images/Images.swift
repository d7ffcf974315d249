import CVips
import Common

/// Images, through libvips (Debian's libvips), the only module that touches
/// it: loaded with the first photo made, not at the process's start.
package enum Images {
    /// Why libvips cannot be used, once it was tried; nil: it started.
    private static let unavailable: String? =
        switch guidance_vips_start() {
        case 0: nil
        case -1: "libvips.so.42 (Debian's libvips42) cannot be loaded"
        default: "libvips did not start"
        }

    /// A JPEG of `image` (JPEG, PNG or WebP bytes) that fits `width`×`height`
    /// pixels: never enlarged, turned as its EXIF orientation says, without
    /// metadata (no camera, place or time leaves with it). Throws with
    /// libvips's reason when it cannot read the image.
    package static func smallerJPEG(_ image: [UInt8], width: Int, height: Int, quality: Int) throws(ImageError) -> [UInt8] {
        if let unavailable { throw ImageError(reason: unavailable) }
        // Only what a photo folder holds goes to libvips; its other loaders (SVG, PDF, …) never see a file.
        guard isPhoto(image) else { throw ImageError(reason: "not a JPEG, PNG or WebP image") }
        var output: UnsafeMutableRawPointer?
        var length = 0
        let failed = image.withUnsafeBytes {
            guidance_vips_smaller_jpeg($0.baseAddress, $0.count, Int32(width), Int32(height), Int32(quality), &output, &length)
        }
        guard failed == 0, let output else {
            let message = guidance_vips_take_error()
            defer { guidance_vips_free(message) }
            let reason = message.map { String(cString: $0) }?.trimmingWhitespace() ?? ""
            throw ImageError(reason: reason.isEmpty ? "the image cannot be read" : reason)
        }
        defer { guidance_vips_free(output) }
        return Array(UnsafeRawBufferPointer(start: output, count: length))
    }
}

extension Images {
    /// Whether the bytes start as a JPEG, PNG or WebP file does.
    static func isPhoto(_ bytes: [UInt8]) -> Bool {
        bytes.starts(with: [0xFF, 0xD8, 0xFF]) || bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
            || (bytes.count >= 12 && bytes.starts(with: Array("RIFF".utf8)) && Array(bytes[8..<12]) == Array("WEBP".utf8))
    }
}

package struct ImageError: Error, CustomStringConvertible {
    package let reason: String
    package var description: String { "libvips: \(reason)" }
}
