// Explicit repair: cut the log at its first damaged point. Nothing here runs implicitly; recovery
// on open never truncates a sealed segment. The report says exactly what was removed.

import Logging
import SystemPackage

package struct RepairReport: Sendable {
    /// The problem the repair cut at; nil when the log had no damage.
    public var firstDamage: LedgerStorageError?
    /// The segment cut short, and where.
    public var truncatedSegment: String?
    public var truncatedAtOffset: UInt64?
    /// Whole segments removed (they followed the damage).
    public var removedSegments: [String] = []
    public var bytesRemoved: UInt64 = 0
    /// Sequences no longer in the log (as far as the intact batches tell).
    public var removedSequences: ClosedRange<UInt64>?
    /// False for a dry run: the report describes what would be removed.
    public var applied = false
}

package enum LogRepair {
    /// Truncates the log just before its first damaged batch (or segment) and removes everything after
    /// it. With `confirm == false` nothing changes and the report is the plan. Takes the writer lock.
    public static func truncateAtFirstDamage(
        directory path: FilePath, fileSystem: any FileSystem = PosixFileSystem(), confirm: Bool,
        logger: Logger = Logger(label: "LedgerStorage.LogRepair")
    ) throws -> RepairReport {
        let directory = LogDirectory(root: path, fileSystem: fileSystem)
        let lock = try WriterLock.acquire(directory: directory, now: LogWriterOptions.wallClockNanoseconds())
        defer { lock.release() }
        let verification = LogVerifier.verify(directory: path, fileSystem: fileSystem)
        var report = RepairReport()
        guard let damage = verification.problems.first(where: { $0.code != .indexMismatch && $0.code != .manifestMismatch }) else {
            return report
        }
        report.firstDamage = damage
        let bases = try directory.segmentBases()
        guard let file = damage.location.file,
              let base = SegmentFileName.parseSegment(String(file.split(separator: "/").last ?? "")),
              let position = bases.firstIndex(of: base)
        else { return report }
        let cutOffset = damage.location.byteOffset ?? 0
        let keepsSegment = cutOffset > UInt64(LogFormat.segmentHeaderBytes)

        var plannedRemovals: [UInt64] = Array(bases[(position + 1)...])
        if !keepsSegment { plannedRemovals.insert(base, at: 0) }
        var bytesRemoved: UInt64 = 0
        let segmentSize = try fileSize(directory: directory, base: base)
        if keepsSegment {
            report.truncatedSegment = LogDirectory.displayName(base: base)
            report.truncatedAtOffset = cutOffset
            bytesRemoved += segmentSize > cutOffset ? segmentSize - cutOffset : 0
        }
        for removed in plannedRemovals {
            report.removedSegments.append(LogDirectory.displayName(base: removed))
            bytesRemoved += try fileSize(directory: directory, base: removed)
        }
        report.bytesRemoved = bytesRemoved
        let firstLost = damage.location.sequences?.lowerBound ?? base
        if let highest = verification.highestSequence, highest >= firstLost { report.removedSequences = firstLost...highest }
        guard confirm else { return report }

        if keepsSegment {
            let segment = try fileSystem.open(directory.segmentPath(base: base), mode: .readWrite)
            try segment.truncate(to: cutOffset)
            try segment.sync()
            try segment.close()
            directory.removeIndex(base: base)
        }
        for removed in plannedRemovals {
            try fileSystem.remove(directory.segmentPath(base: removed))
            directory.removeIndex(base: removed)
        }
        if let manifest = directory.loadManifest() {
            let keptNames = Set(try directory.segmentBases().map { SegmentFileName.segment(base: $0) })
            let truncatedName = SegmentFileName.segment(base: base)
            try directory.writeManifest(Manifest(sealed: manifest.sealed.filter { keptNames.contains($0.segmentName) && $0.segmentName != truncatedName }))
        }
        report.applied = true
        logger.warning("repaired ledger by truncation", metadata: [
            "damage": "\(damage)", "removedSegments": "\(report.removedSegments)", "bytesRemoved": "\(bytesRemoved)",
        ])
        return report
    }

    private static func fileSize(directory: LogDirectory, base: UInt64) throws -> UInt64 {
        let file = try directory.fileSystem.open(directory.segmentPath(base: base), mode: .readOnly)
        defer { try? file.close() }
        return try file.size()
    }
}
