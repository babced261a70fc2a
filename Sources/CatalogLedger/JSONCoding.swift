import BoundedJSON
import Foundation

/// Deterministic JSON for the ledger's own small metadata (sorted keys, so files diff cleanly).
enum JSONCoding {
    static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(value))
    }

    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try BoundedJSON.decode(type, from: bytes)
    }
}
