// A log's segments as they are copied elsewhere while its writer runs (the cluster's segment archive,
// docs/SCALING.md) and written back into an empty log directory. Sealed segments never change; the
// active one is read up to the end of its last complete batch, so a copy holds only what was durable
// (never a batch being written, never the preallocated zeros). The indexes and the MANIFEST are not
// copied: the writer rebuilds them from the segments when it opens the restored log (docs/FORMAT.md).

import SystemPackage

/// One segment file of a log, as shipped.
public struct ShippedSegment: Sendable, Equatable {
    /// The file name in `segments/` (`<seq20>.seg`).
    public var name: String
    /// Not the newest segment: it never changes again (compaction replaces it under another name, or whole).
    public var sealed: Bool
    /// The file's size on disk (sealed) or the length of its durable prefix (active).
    public var byteCount: Int
}

public enum LogShipping {
    /// The log's segment files, oldest first, without reading them: sealed ones with their size, the
    /// active one with the length of its complete batches now. An active segment still being created
    /// (no complete header) holds no records and is left out.
    public static func segments(logDirectory: FilePath, fileSystem: any FileSystem = PosixFileSystem()) throws -> [ShippedSegment] {
        let directory = LogDirectory(root: logDirectory, fileSystem: fileSystem)
        let bases = try directory.segmentBases()
        var result: [ShippedSegment] = []
        for base in bases {
            let name = SegmentFileName.segment(base: base)
            if base == bases.last {
                if try SegmentScanner.isBeingCreated(directory: directory, base: base) { continue }
                result.append(ShippedSegment(name: name, sealed: false, byteCount: Int(try durableEnd(directory: directory, base: base))))
            } else {
                let file = try fileSystem.open(directory.segmentPath(base: base), mode: .readOnly)
                defer { try? file.close() }
                result.append(ShippedSegment(name: name, sealed: true, byteCount: Int(try file.size())))
            }
        }
        return result
    }

    /// The first `segment.byteCount` bytes of a segment `segments(logDirectory:)` listed, from byte
    /// `start` on (a range after the prefix already shipped; 0: the whole listed length).
    public static func read(_ segment: ShippedSegment, from start: Int = 0, logDirectory: FilePath,
                            fileSystem: any FileSystem = PosixFileSystem()) throws -> [UInt8] {
        let directory = LogDirectory(root: logDirectory, fileSystem: fileSystem)
        guard let base = SegmentFileName.parseSegment(segment.name) else {
            throw LedgerStorageError(.invalidArgument, "\(segment.name) is not a segment file name")
        }
        guard (0...segment.byteCount).contains(start) else {
            throw LedgerStorageError(.invalidArgument, "\(segment.name) is read from byte \(start), past its listed length \(segment.byteCount)")
        }
        let file = try fileSystem.open(directory.segmentPath(base: base), mode: .readOnly)
        defer { try? file.close() }
        let bytes = try file.read(at: UInt64(start), count: segment.byteCount - start)
        guard bytes.count == segment.byteCount - start else {
            throw LedgerStorageError(.invalidArgument, "\(segment.name) is shorter than listed (it was replaced meanwhile)")
        }
        return bytes
    }

    /// Writes shipped segments into `logDirectory`, which must hold no segment yet; each file is
    /// synced, then the directory. Opening a writer on it afterwards rebuilds the indexes and the
    /// MANIFEST and checks every segment (recovery).
    public static func restore(_ segments: [(name: String, bytes: [UInt8])], into logDirectory: FilePath,
                               fileSystem: any FileSystem = PosixFileSystem()) throws {
        let directory = LogDirectory(root: logDirectory, fileSystem: fileSystem)
        guard try directory.segmentBases().isEmpty else {
            throw LedgerStorageError(.invalidArgument, "a log is restored only into a directory without segments")
        }
        try fileSystem.createDirectory(directory.segmentsPath)
        for segment in segments {
            guard let base = SegmentFileName.parseSegment(segment.name) else {
                throw LedgerStorageError(.invalidArgument, "\(segment.name) is not a segment file name")
            }
            let file = try fileSystem.open(directory.segmentPath(base: base), mode: .createReadWrite)
            do {
                try file.truncate(to: 0)
                try file.write(segment.bytes, at: 0)
                try file.sync()
                try file.close()
            } catch {
                try? file.close()
                throw error
            }
        }
        try fileSystem.syncDirectory(directory.segmentsPath)
    }

    /// The offset after the last complete batch or footer of a segment.
    private static func durableEnd(directory: LogDirectory, base: UInt64) throws -> UInt64 {
        var scanner = try SegmentScanner.open(directory: directory, base: base)
        defer { scanner.close() }
        var end = UInt64(LogFormat.segmentHeaderBytes)
        while true {
            switch try scanner.next() {
            case .batch(_, let bytes, let offset):
                end = offset + UInt64(bytes.count)
            case .footer:
                end = scanner.offset
            case .end, .incomplete, .preallocated:
                return end
            }
        }
    }
}
