// CRC32C (Castagnoli): the CPU's CRC32C instruction when it has one (CCRC32C), else table-driven
// slicing-by-8 in Swift. Both give the same values (tested). Pure and thread-safe.

import CCRC32C

package enum CRC32C {
    /// Whether `update` uses the CPU's instruction; read once.
    public static let usesHardware = ccrc32c_hardware_available() != 0

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
        guard usesHardware, let base = bytes.baseAddress, bytes.count > 0 else { return softwareUpdate(crcSoFar, bytes) }
        return ~ccrc32c_update_hardware(~crcSoFar, base, bytes.count)
    }

    /// The portable table-driven update (also the reference the hardware path is tested against).
    public static func softwareUpdate(_ crcSoFar: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
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
