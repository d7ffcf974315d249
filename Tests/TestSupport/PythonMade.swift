import Foundation

/// The bytes a Python script writes to `out`, a binary file: uploads made as
/// the schools' own tools make them (Korean Excel's CSV in CP949 by Python's
/// codec, an XLSX by python3-openpyxl, a ZIP by zipfile).
package func pythonMade(_ script: String) throws -> [UInt8] {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("upload-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    process.arguments = ["-c", "import sys\nout = open(sys.argv[1], 'wb')\n" + script + "\nout.close()", path]
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw CocoaError(
            .fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "python3 (and python3-openpyxl, scripts/setup) did not make the file"])
    }
    return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
}
