// The MANIFEST file (docs/FORMAT.md): the sealed segments with their record count, size and last
// batch hash, so removing or replacing a whole sealed segment is detectable. Pure codec.

public struct ManifestEntry: Sendable, Equatable {
    public var segmentName: String
    public var recordCount: UInt64
    public var byteCount: UInt64
    public var lastBatchHash: [UInt8]
    /// Set for a compacted segment: its covered range's end and chain-out hash (docs/FORMAT.md, "Compaction").
    public var compaction: CompactionExtent? = nil
}

package struct Manifest: Sendable, Equatable {
    public var sealed: [ManifestEntry]

    public init(sealed: [ManifestEntry]) { self.sealed = sealed }

    public func encoded() -> [UInt8] {
        var text = LogFormat.manifestFirstLine + "\n"
        for entry in sealed {
            text += "sealed \(entry.segmentName) records=\(entry.recordCount) bytes=\(entry.byteCount) last-hash=\(HexText.encode(entry.lastBatchHash))"
            if let compaction = entry.compaction {
                text += " covers=\(compaction.coveredLastSequence) chain-out=\(HexText.encode(compaction.chainOutHash))"
            }
            text += "\n"
        }
        let crc = CRC32C.checksum(Array(text.utf8))
        let crcText = String(crc, radix: 16)
        text += "crc32c " + String(repeating: "0", count: 8 - crcText.count) + crcText + "\n"
        return Array(text.utf8)
    }

    /// Parses a manifest; nil when the text or its CRC is wrong.
    public static func parse(_ bytes: [UInt8]) -> Manifest? {
        guard let crcLineStart = bytes.dropLast().lastIndex(of: UInt8(ascii: "\n")).map({ $0 + 1 }) else { return nil }
        let body = Array(bytes[..<crcLineStart])
        let crcLine = String(decoding: bytes[crcLineStart...], as: UTF8.self).trimmingSuffixNewline()
        guard crcLine.hasPrefix("crc32c "), let stored = UInt32(crcLine.dropFirst(7), radix: 16),
              stored == CRC32C.checksum(body) else { return nil }
        let lines = String(decoding: body, as: UTF8.self).split(separator: "\n")
        guard lines.first.map(String.init) == LogFormat.manifestFirstLine else { return nil }
        var entries: [ManifestEntry] = []
        for line in lines.dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count == 5 || fields.count == 7, fields[0] == "sealed",
                  SegmentFileName.parseSegment(String(fields[1])) != nil,
                  fields[2].hasPrefix("records="), let records = UInt64(fields[2].dropFirst(8)),
                  fields[3].hasPrefix("bytes="), let byteCount = UInt64(fields[3].dropFirst(6)),
                  fields[4].hasPrefix("last-hash="), let hash = HexText.decode(fields[4].dropFirst(10)),
                  hash.count == LogFormat.hashBytes
            else { return nil }
            var compaction: CompactionExtent?
            if fields.count == 7 {
                guard fields[5].hasPrefix("covers="), let covered = UInt64(fields[5].dropFirst(7)),
                      fields[6].hasPrefix("chain-out="), let chainOut = HexText.decode(fields[6].dropFirst(10)),
                      chainOut.count == LogFormat.hashBytes
                else { return nil }
                compaction = CompactionExtent(coveredLastSequence: covered, chainOutHash: chainOut)
            }
            entries.append(ManifestEntry(segmentName: String(fields[1]), recordCount: records, byteCount: byteCount, lastBatchHash: hash,
                                         compaction: compaction))
        }
        return Manifest(sealed: entries)
    }
}

extension String {
    fileprivate func trimmingSuffixNewline() -> String {
        hasSuffix("\n") ? String(dropLast()) : self
    }
}
