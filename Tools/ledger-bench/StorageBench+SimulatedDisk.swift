// A file system for `ledger-bench storage --simulated-sync-us N`: real files and writes (page
// cache), but every fdatasync is replaced by a sleep of N microseconds. It takes the shared disk's
// noise out of the durable-append figures, so two commit designs can be compared at the sync
// latency of a quiet disk (about 160 us here). Not durable: for measurement only.

import Foundation
import LedgerStorage
import SystemPackage

struct SimulatedSyncFileSystem: FileSystem {
    let base = PosixFileSystem()
    let syncMicroseconds: Int

    func open(_ path: FilePath, mode: FileOpenMode) throws -> any LedgerFile {
        SimulatedSyncFile(file: try base.open(path, mode: mode), syncMicroseconds: syncMicroseconds)
    }

    func exists(_ path: FilePath) -> Bool { base.exists(path) }
    func contentsOfDirectory(_ path: FilePath) throws -> [String] { try base.contentsOfDirectory(path) }
    func createDirectory(_ path: FilePath) throws { try base.createDirectory(path) }
    func remove(_ path: FilePath) throws { try base.remove(path) }
    func rename(_ source: FilePath, to destination: FilePath) throws { try base.rename(source, to: destination) }
    func syncDirectory(_ path: FilePath) throws { usleep(UInt32(syncMicroseconds)) }
    func lockExclusive(_ path: FilePath) throws -> (any LedgerFileLock)? { try base.lockExclusive(path) }
}

/// Thread-safety: as the wrapped POSIX file (positional I/O); the sleep holds no lock.
final class SimulatedSyncFile: LedgerFile, @unchecked Sendable {
    let file: any LedgerFile
    let syncMicroseconds: Int

    init(file: any LedgerFile, syncMicroseconds: Int) {
        self.file = file
        self.syncMicroseconds = syncMicroseconds
    }

    func read(at offset: UInt64, count: Int) throws -> [UInt8] { try file.read(at: offset, count: count) }
    func write(_ bytes: [UInt8], at offset: UInt64) throws { try file.write(bytes, at: offset) }
    func size() throws -> UInt64 { try file.size() }
    func truncate(to size: UInt64) throws { try file.truncate(to: size) }
    func sync() throws { usleep(UInt32(syncMicroseconds)) }
    func close() throws { try file.close() }
}
