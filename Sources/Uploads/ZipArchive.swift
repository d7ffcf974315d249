import CArchive
import Glibc

/// Why an uploaded file cannot be read, in words for the admin who sent it.
package struct UploadError: Error, Equatable, CustomStringConvertible {
    package let reason: String

    package init(_ reason: String) {
        self.reason = reason
    }

    package var description: String { reason }
}

/// The files of a ZIP archive (an XLSX workbook, a folder of photos), read
/// from memory with libarchive. The one place that calls libarchive.
package enum ZipArchive {
    package struct Entry: Sendable {
        /// The path inside the archive, `/`-separated.
        package let name: String
        package let bytes: [UInt8]
    }

    /// How much an archive may unpack to: a small upload must not unpack to
    /// gigabytes (a ZIP bomb), nor hold more files than a school has.
    package struct Limits: Sendable {
        package var entries = 10_000
        package var bytes = 256 << 20

        package init(entries: Int = 10_000, bytes: Int = 256 << 20) {
            self.entries = entries
            self.bytes = bytes
        }
    }

    /// Every regular file of the ZIP in `data`, in archive order, named in
    /// UTF-8; those `wanted` refuses are skipped unread.
    package static func entries(
        of data: [UInt8], limits: Limits = Limits(), wanted: (String) -> Bool = { _ in true }
    ) throws(UploadError) -> [Entry] {
        // Set before the reader is made: it takes the locale's encoding then.
        let previous = uselocale(guidance_archive_utf8_locale())
        defer { uselocale(previous) }
        guard let archive = archive_read_new() else { throw UploadError("the archive reader could not start") }
        defer { archive_read_free(archive) }
        archive_read_support_format_zip(archive)
        // Names without ZIP's UTF-8 flag are Korean Windows's: CP949.
        archive_read_set_format_option(archive, "zip", "hdrcharset", "CP949")
        let entries = data.withUnsafeBytes { buffer in
            Result { () throws(UploadError) in try ZipArchive.read(archive, buffer, limits, wanted) }
        }
        return try entries.get()
    }

    private static func read(
        _ archive: OpaquePointer, _ buffer: UnsafeRawBufferPointer, _ limits: Limits, _ wanted: (String) -> Bool
    ) throws(UploadError) -> [Entry] {
        guard archive_read_open_memory(archive, buffer.baseAddress, buffer.count) == ARCHIVE_OK else {
            throw UploadError("not a ZIP file")
        }
        var entries: [Entry] = []
        var total = 0
        var seen = 0
        var header: OpaquePointer?
        while true {
            let status = archive_read_next_header(archive, &header)
            if status == ARCHIVE_EOF { break }
            guard status == ARCHIVE_OK || status == ARCHIVE_WARN, let header else {
                throw UploadError("the ZIP file is damaged (\(message(archive)))")
            }
            seen += 1
            guard seen <= limits.entries else { throw UploadError("the ZIP file holds more than \(limits.entries) files") }
            guard archive_entry_filetype(header) == ZipArchive.regularFile,
                let path = archive_entry_pathname_utf8(header) ?? archive_entry_pathname(header)
            else { continue }
            let name = String(cString: path)
            guard wanted(name) else { continue }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let read = chunk.withUnsafeMutableBytes { archive_read_data(archive, $0.baseAddress, $0.count) }
                if read == 0 { break }
                guard read > 0 else { throw UploadError("\(name) in the ZIP file cannot be read (\(message(archive)))") }
                total += read
                guard total <= limits.bytes else {
                    throw UploadError("the ZIP file unpacks to more than \(limits.bytes >> 20) MiB")
                }
                bytes += chunk[..<read]
            }
            entries.append(Entry(name: name, bytes: bytes))
        }
        return entries
    }

    /// `AE_IFREG`, a cast in a macro that Swift does not import.
    private static let regularFile: mode_t = 0o100000

    private static func message(_ archive: OpaquePointer) -> String {
        archive_error_string(archive).map { String(cString: $0) } ?? "no reason given"
    }
}
