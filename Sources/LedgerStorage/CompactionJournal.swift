// The COMPACTION journal (docs/FORMAT.md, "COMPACTION"; the protocol is in docs/DESIGN.md,
// "Compaction and retention"): written atomically after the compacted segment is verified, it is
// the commit point of a run. The switch it describes is idempotent, so a writer open that finds the
// journal rolls the run forward.

import Crypto
import SystemPackage

public struct CompactionJournal: Sendable, Equatable {
    public var newSegmentName: String
    public var newFileHash: [UInt8]
    public var oldSegments: [CompactionRunReport.OldSegment]

    static let firstLine = "catalog-ledger-compaction 1"

    public func encoded() -> [UInt8] {
        var text = Self.firstLine + "\n"
        text += "new \(newSegmentName) sha256=\(HexText.encode(newFileHash))\n"
        for old in oldSegments {
            text += "old \(old.name) bytes=\(old.byteCount) sha256=\(HexText.encode(old.fileHash))\n"
        }
        let crc = String(CRC32C.checksum(Array(text.utf8)), radix: 16)
        text += "crc32c " + String(repeating: "0", count: 8 - crc.count) + crc + "\n"
        return Array(text.utf8)
    }

    /// Parses a journal; nil when its text or CRC is wrong (an interrupted atomic write never
    /// leaves such a file under the final name, so this means damage).
    public static func parse(_ bytes: [UInt8]) -> CompactionJournal? {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
        guard lines.count >= 4, lines.first == firstLine, let crcLine = lines.last, crcLine.hasPrefix("crc32c "),
              let stored = UInt32(crcLine.dropFirst(7), radix: 16) else { return nil }
        let body = lines.dropLast().joined(separator: "\n") + "\n"
        guard CRC32C.checksum(Array(body.utf8)) == stored else { return nil }
        let newFields = lines[1].split(separator: " ")
        guard newFields.count == 3, newFields[0] == "new", newFields[2].hasPrefix("sha256="),
              let newHash = HexText.decode(newFields[2].dropFirst(7)),
              SegmentFileName.parseSegment(String(newFields[1])) != nil else { return nil }
        var olds: [CompactionRunReport.OldSegment] = []
        for line in lines.dropFirst(2).dropLast() {
            let fields = line.split(separator: " ")
            guard fields.count == 4, fields[0] == "old", fields[2].hasPrefix("bytes="), let count = UInt64(fields[2].dropFirst(6)),
                  fields[3].hasPrefix("sha256="), let hash = HexText.decode(fields[3].dropFirst(7)) else { return nil }
            olds.append(.init(name: String(fields[1]), byteCount: count, fileHash: hash))
        }
        return CompactionJournal(newSegmentName: String(newFields[1]), newFileHash: newHash, oldSegments: olds)
    }

    /// Step 4 of the protocol, idempotent: renames the compacted files into place, removes the other
    /// segments of the run and their indexes, and writes `manifest` when given (recovery rebuilds it
    /// from the footers instead). Throws `manifestMismatch` when the new file is not the journaled one.
    /// `checkNewFile` re-hashes the new file; the live switch skips it (the file was verified just
    /// before the journal was written) so appends do not wait for a whole-file read.
    static func finishSwitch(directory: LogDirectory, journal: CompactionJournal, manifest: Manifest?, checkNewFile: Bool = true) throws {
        let fileSystem = directory.fileSystem
        let finalPath = directory.segmentsPath.appending(journal.newSegmentName)
        let compactingPath = LogWriter.compactingPath(finalPath)
        let candidate = fileSystem.exists(compactingPath) ? compactingPath : finalPath
        let matches = checkNewFile
            ? Array(SHA256.hash(data: fileSystem.exists(candidate) ? try directory.readWholeFile(candidate) : [])) == journal.newFileHash
            : fileSystem.exists(candidate)
        guard matches else {
            throw LedgerStorageError(.manifestMismatch,
                                     "the compacted segment \(journal.newSegmentName) is missing or differs from the one journaled; only an explicit repair may proceed",
                                     location: LogLocation(file: LogFormat.compactionJournalFileName))
        }
        if let manifest { try directory.writeManifest(manifest) }
        let base = SegmentFileName.parseSegment(journal.newSegmentName)!
        for path in [directory.sequenceIndexPath(base: base), directory.timeIndexPath(base: base)] {
            let temporary = LogWriter.compactingPath(path)
            if fileSystem.exists(temporary) { try fileSystem.rename(temporary, to: path) }
        }
        if candidate == compactingPath { try fileSystem.rename(compactingPath, to: finalPath) }
        for old in journal.oldSegments where old.name != journal.newSegmentName {
            let path = directory.segmentsPath.appending(old.name)
            if fileSystem.exists(path) { try fileSystem.remove(path) }
            if let oldBase = SegmentFileName.parseSegment(old.name) { directory.removeIndex(base: oldBase) }
        }
        try fileSystem.syncDirectory(directory.segmentsPath)
    }

    /// Run by a writer open before recovery: rolls a journaled run forward, or removes the
    /// temporary files of a run interrupted before its commit point. Returns the journal rolled forward.
    static func recover(directory: LogDirectory) throws -> CompactionJournal? {
        let fileSystem = directory.fileSystem
        if fileSystem.exists(directory.compactionJournalPath) {
            guard let journal = parse(try directory.readWholeFile(directory.compactionJournalPath)) else {
                throw LedgerStorageError(.manifestMismatch, "compaction journal unreadable or its CRC is wrong",
                                         location: LogLocation(file: LogFormat.compactionJournalFileName))
            }
            try finishSwitch(directory: directory, journal: journal, manifest: nil)
            return journal
        }
        guard fileSystem.exists(directory.segmentsPath) else { return nil }
        var removed = false
        for name in try fileSystem.contentsOfDirectory(directory.segmentsPath) where name.hasSuffix(LogFormat.compactingSuffix) {
            try fileSystem.remove(directory.segmentsPath.appending(name))
            removed = true
        }
        if removed { try fileSystem.syncDirectory(directory.segmentsPath) }
        return nil
    }
}
