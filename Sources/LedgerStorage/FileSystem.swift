// The file-system seam. Every byte LedgerStorage reads or writes goes through these protocols, so the
// POSIX implementation can be swapped for the fault-injecting in-memory one in tests.

import SystemPackage

public enum FileOpenMode: Sendable {
    case readOnly
    case readWrite
    /// Read-write, creating the file when missing (the parent directory is then synced).
    case createReadWrite
}

/// A file system as LedgerStorage needs it. Implementations are thread-safe.
public protocol FileSystem: Sendable {
    func open(_ path: FilePath, mode: FileOpenMode) throws -> any LedgerFile
    func exists(_ path: FilePath) -> Bool
    /// Names (not paths) of the entries of a directory, unsorted.
    func contentsOfDirectory(_ path: FilePath) throws -> [String]
    /// Creates a directory (and its parents); succeeds when it exists already.
    func createDirectory(_ path: FilePath) throws
    /// Removes a file and syncs its directory.
    func remove(_ path: FilePath) throws
    /// Renames a file over another atomically and syncs the directory.
    func rename(_ source: FilePath, to destination: FilePath) throws
    func syncDirectory(_ path: FilePath) throws
    /// Takes an exclusive advisory lock on `path` (creating it), or returns nil when someone else holds it.
    func lockExclusive(_ path: FilePath) throws -> (any LedgerFileLock)?
}

/// An open file. Writes are positional and complete (a partial write is an error); reads return
/// fewer bytes than asked only at end of file. A handle may be used from several threads, but the
/// writer is its only mutator.
public protocol LedgerFile: AnyObject, Sendable {
    func read(at offset: UInt64, count: Int) throws -> [UInt8]
    func write(_ bytes: [UInt8], at offset: UInt64) throws
    func size() throws -> UInt64
    func truncate(to size: UInt64) throws
    /// Makes the written data durable (fdatasync).
    func sync() throws
    func close() throws
}

/// A held advisory lock. Releasing it (or the process ending) lets another writer in.
public protocol LedgerFileLock: AnyObject, Sendable {
    /// The lock file itself, for writing the holder's identity into it.
    var file: any LedgerFile { get }
    func release()
}

extension LedgerFile {
    /// Reads exactly `count` bytes or returns nil when the file ends first.
    func readExactly(at offset: UInt64, count: Int) throws -> [UInt8]? {
        let bytes = try read(at: offset, count: count)
        return bytes.count == count ? bytes : nil
    }
}

/// A file system that wraps another and forwards every call it does not implement itself: the
/// verifier's exact reads, and the test and benchmark wrappers that inject faults, stale sizes or
/// delays. Conformers implement `open` (to wrap the files) and whatever else they change.
package protocol ForwardingFileSystem: FileSystem {
    /// The wrapped file system.
    var baseFileSystem: any FileSystem { get }
}

extension ForwardingFileSystem {
    public func exists(_ path: FilePath) -> Bool { baseFileSystem.exists(path) }
    public func contentsOfDirectory(_ path: FilePath) throws -> [String] { try baseFileSystem.contentsOfDirectory(path) }
    public func createDirectory(_ path: FilePath) throws { try baseFileSystem.createDirectory(path) }
    public func remove(_ path: FilePath) throws { try baseFileSystem.remove(path) }
    public func rename(_ source: FilePath, to destination: FilePath) throws { try baseFileSystem.rename(source, to: destination) }
    public func syncDirectory(_ path: FilePath) throws { try baseFileSystem.syncDirectory(path) }
    public func lockExclusive(_ path: FilePath) throws -> (any LedgerFileLock)? { try baseFileSystem.lockExclusive(path) }
}

/// A file that wraps another and forwards every call it does not implement itself (see
/// `ForwardingFileSystem`).
package protocol ForwardingLedgerFile: LedgerFile {
    var wrapped: any LedgerFile { get }
}

extension ForwardingLedgerFile {
    public func read(at offset: UInt64, count: Int) throws -> [UInt8] { try wrapped.read(at: offset, count: count) }
    public func write(_ bytes: [UInt8], at offset: UInt64) throws { try wrapped.write(bytes, at: offset) }
    public func size() throws -> UInt64 { try wrapped.size() }
    public func truncate(to size: UInt64) throws { try wrapped.truncate(to: size) }
    public func sync() throws { try wrapped.sync() }
    public func close() throws { try wrapped.close() }
}
