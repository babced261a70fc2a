import LedgerStorage
import LedgerStorageTesting
import Testing

@Suite("CRC32C")
struct CRC32CTests {
    @Test("known vectors (RFC 3720 appendix B.4 and the check value)")
    func knownVectors() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.checksum((0..<32).map { UInt8($0) }) == 0x46DD_794E)
        #expect(CRC32C.checksum((0..<32).map { UInt8(31 - $0) }) == 0x113F_DB5C)
        #expect(CRC32C.checksum([]) == 0)
    }

    @Test("incremental update equals one-shot checksum at every split", arguments: [0, 1, 7, 8, 9, 63, 100])
    func incremental(split: Int) {
        let bytes = (0..<100).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        let first = CRC32C.checksum(Array(bytes[0..<split]))
        let combined = bytes.withUnsafeBytes { CRC32C.update(first, UnsafeRawBufferPointer(rebasing: $0[split...])) }
        #expect(combined == CRC32C.checksum(bytes))
    }

    @Test("slicing-by-8 agrees with the bitwise definition on unaligned lengths")
    func agreesWithBitwise() {
        var generator = SeededGenerator(seed: 42)
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            }
            #expect(CRC32C.checksum(bytes) == ~crc, "length \(length)")
        }
    }

    @Test("the hardware path and the Swift tables agree on every length and alignment")
    func hardwareAgreesWithSoftware() {
        print("CRC32C uses the CPU instruction: \(CRC32C.usesHardware)")
        var generator = SeededGenerator(seed: 7)
        let bytes = (0..<5_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes.withUnsafeBytes { all in
            for (start, length) in [(0, 0), (0, 1), (1, 7), (3, 8), (5, 9), (7, 64), (1, 1_000), (0, 4_999)] {
                let slice = UnsafeRawBufferPointer(rebasing: all[start..<(start + length)])
                for seed: UInt32 in [0, 0xDEAD_BEEF] {
                    #expect(CRC32C.update(seed, slice) == CRC32C.softwareUpdate(seed, slice), "start \(start) length \(length)")
                }
            }
        }
    }
}
