// A file system for `ledger-bench storage --simulated-sync-us N`: real files and writes (page
// cache), but every fdatasync is replaced by a sleep of N microseconds. It takes the shared disk's
// noise out of the durable-append figures, so two commit designs can be compared at the sync
// latency of a quiet disk (about 160 us here). Not durable: for measurement only.

import Foundation
import LedgerStorage
import SystemPackage

struct SimulatedSyncFileSystem: ForwardingFileSystem {
    let baseFileSystem: any FileSystem = PosixFileSystem()
    let syncMicroseconds: Int

    func open(_ path: FilePath, mode: FileOpenMode) throws -> any LedgerFile {
        SimulatedSyncFile(wrapped: try baseFileSystem.open(path, mode: mode), syncMicroseconds: syncMicroseconds)
    }

    func syncDirectory(_ path: FilePath) throws { usleep(UInt32(syncMicroseconds)) }
}

/// Thread-safety: as the wrapped POSIX file (positional I/O); the sleep holds no lock.
final class SimulatedSyncFile: ForwardingLedgerFile, @unchecked Sendable {
    let wrapped: any LedgerFile
    let syncMicroseconds: Int

    init(wrapped: any LedgerFile, syncMicroseconds: Int) {
        self.wrapped = wrapped
        self.syncMicroseconds = syncMicroseconds
    }

    func sync() throws { usleep(UInt32(syncMicroseconds)) }
}
