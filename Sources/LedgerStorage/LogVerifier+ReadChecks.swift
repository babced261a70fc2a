// The verifier's view of the file system. The `LedgerFile` contract allows a read to return fewer
// bytes than asked only at the end of the file; a medium, driver or network file system that breaks
// it would otherwise make the verifier see a truncated item, call intact data a torn tail (and so
// leave it out of `VerifyReport.damage`), or hand a short header to a parser that requires a whole
// one. Here such a read becomes what it is: a read error (`.io(EIO)`) located at the read.

import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Forwards every call to `base`; only reads are checked. Thread-safe as `base` is.
struct ExactReadFileSystem: ForwardingFileSystem {
    let base: any FileSystem
    var baseFileSystem: any FileSystem { base }

    func open(_ path: FilePath, mode: FileOpenMode) throws -> any LedgerFile {
        ExactReadFile(wrapped: try base.open(path, mode: mode), path: path.string)
    }
}

/// A file whose short reads before the end of the file throw. Immutable; thread-safe as the wrapped file is.
final class ExactReadFile: ForwardingLedgerFile {
    let wrapped: any LedgerFile
    let path: String

    init(wrapped: any LedgerFile, path: String) {
        self.wrapped = wrapped
        self.path = path
    }

    func read(at offset: UInt64, count: Int) throws -> [UInt8] {
        let bytes = try wrapped.read(at: offset, count: count)
        guard bytes.count < count else { return bytes }
        // Only a short read asks for the size, so intact files cost nothing extra. The size is read
        // after the read: a file a live writer cut back meanwhile (a failed group, or a seal cutting
        // preallocated zeros) ends before the read's end, so only a size past that end means the
        // bytes were there to be read.
        let size = try wrapped.size()
        let end = offset.addingReportingOverflow(UInt64(count))
        if !end.overflow, end.partialValue <= size {
            throw LedgerStorageError(
                .io(errno: EIO), "short read: \(bytes.count) of \(count) bytes before the end of the file (\(size) bytes)",
                location: LogLocation(file: path, byteOffset: offset))
        }
        return bytes
    }
}

extension LedgerStorageError {
    /// The medium failed to deliver bytes (as opposed to bytes that arrived and are wrong).
    var isReadFailure: Bool {
        switch code {
        case .io, .noSpace: true
        default: false
        }
    }
}
