// Paths inside a ledger directory and segment discovery. Thin I/O over `FileSystem`.

import SystemPackage

struct LogDirectory: Sendable {
    let root: FilePath
    let fileSystem: any FileSystem

    var segmentsPath: FilePath { root.appending(LogFormat.segmentsDirectoryName) }
    var lockPath: FilePath { root.appending(LogFormat.lockFileName) }
    var manifestPath: FilePath { root.appending(LogFormat.manifestFileName) }
    var manifestTemporaryPath: FilePath { root.appending(LogFormat.manifestTemporaryFileName) }

    func segmentPath(base: UInt64) -> FilePath { segmentsPath.appending(SegmentFileName.segment(base: base)) }
    func sequenceIndexPath(base: UInt64) -> FilePath {
        segmentsPath.appending(SegmentFileName.name(base: base, extension: LogFormat.sequenceIndexExtension))
    }
    func timeIndexPath(base: UInt64) -> FilePath {
        segmentsPath.appending(SegmentFileName.name(base: base, extension: LogFormat.timeIndexExtension))
    }

    /// The name used in error locations and reports, relative to the ledger directory.
    static func displayName(base: UInt64) -> String {
        LogFormat.segmentsDirectoryName + "/" + SegmentFileName.segment(base: base)
    }

    /// Base sequences of the segment files, ascending. Empty when the directory does not exist yet.
    func segmentBases() throws -> [UInt64] {
        guard fileSystem.exists(segmentsPath) else { return [] }
        return try fileSystem.contentsOfDirectory(segmentsPath).compactMap(SegmentFileName.parseSegment).sorted()
    }

    /// Loads the sparse index of a segment, or nil when missing or damaged.
    func loadIndex(base: UInt64) -> SparseIndex? {
        guard let sequenceBytes = try? readWholeFile(sequenceIndexPath(base: base)),
              let timeBytes = try? readWholeFile(timeIndexPath(base: base)) else { return nil }
        return SparseIndex.decode(sequenceIndex: sequenceBytes, timeIndex: timeBytes, segmentBase: base)
    }

    func readWholeFile(_ path: FilePath) throws -> [UInt8] {
        let file = try fileSystem.open(path, mode: .readOnly)
        defer { try? file.close() }
        return try file.read(at: 0, count: Int(try file.size()))
    }

    /// Writes a file through a temporary name and renames it into place, so readers never see half of it.
    /// `durable: false` skips the fsync, for derived files whose loss only costs a rebuild.
    func writeFileAtomically(_ path: FilePath, bytes: [UInt8], durable: Bool = true) throws {
        let temporary = FilePath(path.string + ".tmp")
        let file = try fileSystem.open(temporary, mode: .createReadWrite)
        do {
            try file.truncate(to: 0)
            try file.write(bytes, at: 0)
            if durable { try file.sync() }
            try file.close()
        } catch {
            try? file.close()
            throw error
        }
        try fileSystem.rename(temporary, to: path)
    }

    func writeIndex(_ index: SparseIndex, durable: Bool = true) throws {
        try writeFileAtomically(sequenceIndexPath(base: index.segmentBase), bytes: index.encodedSequenceIndex(), durable: durable)
        try writeFileAtomically(timeIndexPath(base: index.segmentBase), bytes: index.encodedTimeIndex(), durable: durable)
    }

    func removeIndex(base: UInt64) {
        for path in [sequenceIndexPath(base: base), timeIndexPath(base: base)] where fileSystem.exists(path) {
            try? fileSystem.remove(path)
        }
    }

    func loadManifest() -> Manifest? {
        guard fileSystem.exists(manifestPath), let bytes = try? readWholeFile(manifestPath) else { return nil }
        return Manifest.parse(bytes)
    }

    func writeManifest(_ manifest: Manifest) throws {
        try writeFileAtomically(manifestPath, bytes: manifest.encoded())
    }
}
