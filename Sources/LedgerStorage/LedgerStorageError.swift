// The one error type of LedgerStorage: a code, a human message and a location.

import Foundation

/// Where in the log a problem was found. Every field is optional because some errors (a lock held,
/// a full disk) have no byte position.
public struct LogLocation: Sendable, Equatable, CustomStringConvertible {
    /// File name relative to the ledger directory, e.g. `segments/00000000000000000000.seg`.
    public var file: String?
    /// Byte offset inside `file`.
    public var byteOffset: UInt64?
    /// Sequences affected, when known.
    public var sequences: ClosedRange<UInt64>?

    public init(file: String? = nil, byteOffset: UInt64? = nil, sequences: ClosedRange<UInt64>? = nil) {
        self.file = file
        self.byteOffset = byteOffset
        self.sequences = sequences
    }

    public var description: String {
        var parts: [String] = []
        if let file { parts.append(file) }
        if let byteOffset { parts.append("offset \(byteOffset)") }
        if let sequences { parts.append("sequences \(sequences.lowerBound)...\(sequences.upperBound)") }
        return parts.isEmpty ? "(no location)" : parts.joined(separator: ", ")
    }
}

/// Who holds the writer lock of a ledger directory, as written in its LOCK file.
public struct LockHolder: Sendable, Equatable, CustomStringConvertible {
    public var pid: Int32?
    public var host: String?
    /// Nanoseconds since the Unix epoch when the holder took the lock.
    public var since: Int64?

    public var description: String {
        "pid \(pid.map(String.init) ?? "?") on host \(host ?? "?") since \(since.map(String.init) ?? "?") ns"
    }
}

public struct LedgerStorageError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        /// A batch whose magic, version, CRC, lengths, compression or records are wrong.
        case corruptBatch
        /// A batch's previous-hash does not match the hash of the batch before it.
        case brokenHashChain
        /// A segment header that is unreadable or disagrees with its file name.
        case corruptSegmentHeader
        /// A sealed segment's footer is missing, damaged or disagrees with its batches.
        case corruptFooter
        /// Sequences are not contiguous (a segment or batch is missing or out of place).
        case sequenceGap
        /// Ledger time goes backwards.
        case timeOrder
        /// The manifest disagrees with the segments.
        case manifestMismatch
        /// The active segment ends in an incomplete or damaged batch (recoverable by reopening the writer).
        case tornTail
        /// A sparse index file is missing or disagrees with its segment (rebuilt by the writer).
        case indexMismatch
        /// Another writer holds the directory lock.
        case lockHeld(LockHolder)
        /// An operating system call failed with this errno.
        case io(errno: Int32)
        /// The file system is full (ENOSPC).
        case noSpace
        /// An earlier write or sync failed; the writer must be reopened to recover.
        case writerFailed
        /// The writer was closed.
        case closed
        /// A caller asked for something that cannot exist (e.g. a payload over the size limit).
        case invalidArgument
    }

    public var code: Code
    public var message: String
    public var location: LogLocation

    public init(_ code: Code, _ message: String, location: LogLocation = LogLocation()) {
        self.code = code
        self.message = message
        self.location = location
    }

    public var description: String { "\(code): \(message) [\(location)]" }

    /// `error` itself when it is a storage error, else an I/O error (EIO) describing it.
    static func wrapping(_ error: any Error) -> LedgerStorageError {
        error as? LedgerStorageError ?? LedgerStorageError(.io(errno: EIO), "\(error)")
    }

    /// The same error with a location filled in where it had none.
    func located(file: String? = nil, byteOffset: UInt64? = nil) -> LedgerStorageError {
        var copy = self
        if copy.location.file == nil { copy.location.file = file }
        if copy.location.byteOffset == nil { copy.location.byteOffset = byteOffset }
        return copy
    }
}
