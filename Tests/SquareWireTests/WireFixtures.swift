import Foundation

/// The Square bodies of Tests/Fixtures/square, shared with CatalogModelTests.
enum WireFixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/square")

    static func names() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { !$0.hasPrefix(".") }.sorted()
    }

    static func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: directory.appendingPathComponent(name)))
    }
}

extension Array where Element == UInt8 {
    init(_ text: String) { self = Array(text.utf8) }
    var text: String { String(decoding: self, as: UTF8.self) }
}
