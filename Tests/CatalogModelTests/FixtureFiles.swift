import Foundation

/// Reads fixtures from `Tests/Fixtures`, found relative to this source file so tests run from
/// any working directory and never reach outside the repository.
enum FixtureFiles {
    static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    static func bytes(_ relativePath: String) throws -> [UInt8] {
        Array(try Data(contentsOf: root.appendingPathComponent(relativePath)))
    }

    static func names(in directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(directory).path)
            .filter { !$0.hasPrefix(".") }
            .sorted()
    }

    static func square(_ name: String) throws -> [UInt8] { try bytes("square/\(name)") }
}

extension Array where Element == UInt8 {
    init(_ text: String) { self = Array(text.utf8) }
    var text: String { String(decoding: self, as: UTF8.self) }
}
