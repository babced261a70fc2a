/// Little helpers for the event codec: LEB128 varints, zigzag int64, length-prefixed bytes.
/// `ByteWriter` and `ByteReader` are value types used by one thread at a time.
struct ByteWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    mutating func byte(_ value: UInt8) { bytes.append(value) }

    mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    mutating func zigzag(_ value: Int64) {
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    mutating func data(_ value: [UInt8]) {
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    mutating func string(_ value: String) { data(Array(value.utf8)) }

    mutating func optionalString(_ value: String?) {
        if let value { byte(1); string(value) } else { byte(0) }
    }
}

struct ByteReader {
    let bytes: [UInt8]
    var offset: Int
    let context: String

    init(_ bytes: [UInt8], context: String) {
        self.bytes = bytes
        self.offset = 0
        self.context = context
    }

    var isAtEnd: Bool { offset == bytes.count }

    func truncated() -> CatalogModelError {
        CatalogModelError(.truncatedEvent, "event payload ends early", location: "\(context) byte \(offset)")
    }

    func malformed(_ message: String) -> CatalogModelError {
        CatalogModelError(.malformedEvent, message, location: "\(context) byte \(offset)")
    }

    mutating func byte() throws -> UInt8 {
        guard offset < bytes.count else { throw truncated() }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func varint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try byte()
            if shift == 63 && b > 1 { throw malformed("varint overflows 64 bits") }
            result |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 {
                // Only the shortest form is accepted, so every event has exactly one encoding.
                if b == 0 && shift > 0 { throw malformed("overlong varint") }
                return result
            }
            shift += 7
            if shift > 63 { throw malformed("varint longer than 10 bytes") }
        }
    }

    mutating func zigzag() throws -> Int64 {
        let raw = try varint()
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    mutating func uint32() throws -> UInt32 {
        let raw = try varint()
        guard raw <= UInt64(UInt32.max) else { throw malformed("value exceeds UInt32") }
        return UInt32(raw)
    }

    mutating func data() throws -> [UInt8] {
        let count = try varint()
        guard count <= UInt64(bytes.count - offset) else { throw truncated() }
        let end = offset + Int(count)
        defer { offset = end }
        return Array(bytes[offset..<end])
    }

    mutating func string() throws -> String {
        let count = try varint()
        guard count <= UInt64(bytes.count - offset) else { throw truncated() }
        let end = offset + Int(count)
        // Decoded straight from the slice: no intermediate array.
        guard let s = String(validating: bytes[offset..<end], as: UTF8.self) else { throw malformed("invalid UTF-8 in string") }
        offset = end
        return s
    }

    mutating func optionalString() throws -> String? {
        switch try byte() {
        case 0: return nil
        case 1: return try string()
        default: throw malformed("invalid optional tag")
        }
    }

    mutating func bool() throws -> Bool {
        switch try byte() {
        case 0: return false
        case 1: return true
        default: throw malformed("invalid boolean")
        }
    }
}
