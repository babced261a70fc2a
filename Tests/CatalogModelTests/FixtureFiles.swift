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

/// Deterministic random numbers (SplitMix64) so that a failing property run can be replayed
/// from its printed seed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
