// CRC32C (Castagnoli), table-driven slicing-by-8. Pure and thread-safe (the tables are immutable).

public enum CRC32C {
    /// Reflected Castagnoli polynomial.
    static let polynomial: UInt32 = 0x82F6_3B78

    /// Eight 256-entry tables laid out contiguously: table k at [k*256 ..< (k+1)*256].
    static let tables: [UInt32] = {
        var t = [UInt32](repeating: 0, count: 8 * 256)
        for i in 0..<256 {
            var crc = UInt32(i)
            for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ polynomial : crc >> 1 }
            t[i] = crc
        }
        for i in 0..<256 {
            for k in 1..<8 {
                let previous = t[(k - 1) * 256 + i]
                t[k * 256 + i] = (previous >> 8) ^ t[Int(previous & 0xFF)]
            }
        }
        return t
    }()

    /// The CRC32C of `bytes`.
    public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        update(0, bytes)
    }

    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }

    public static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }

    /// Continues a CRC: `update(checksum(a), b) == checksum(a + b)`.
    public static func update(_ crcSoFar: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc = ~crcSoFar
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crcSoFar }
        return tables.withUnsafeBufferPointer { table -> UInt32 in
            let t = table.baseAddress!
            var p = base
            var remaining = bytes.count
            while remaining >= 8 {
                let low = p.loadUnaligned(as: UInt32.self).littleEndian ^ crc
                let high = p.loadUnaligned(fromByteOffset: 4, as: UInt32.self).littleEndian
                crc = t[7 * 256 + Int(low & 0xFF)]
                    ^ t[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((low >> 16) & 0xFF)]
                    ^ t[4 * 256 + Int(low >> 24)]
                    ^ t[3 * 256 + Int(high & 0xFF)]
                    ^ t[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((high >> 16) & 0xFF)]
                    ^ t[Int(high >> 24)]
                p += 8
                remaining -= 8
            }
            while remaining > 0 {
                crc = (crc >> 8) ^ t[Int((crc ^ UInt32(p.load(as: UInt8.self))) & 0xFF)]
                p += 1
                remaining -= 1
            }
            return ~crc
        }
    }
}
