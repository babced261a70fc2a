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

    func syncDirectory(_ path: FilePath) throws { simulatedSyncSleep(microseconds: syncMicroseconds) }
}

/// Thread-safety: as the wrapped POSIX file (positional I/O); the sleep holds no lock.
final class SimulatedSyncFile: ForwardingLedgerFile, @unchecked Sendable {
    let wrapped: any LedgerFile
    let syncMicroseconds: Int

    init(wrapped: any LedgerFile, syncMicroseconds: Int) {
        self.wrapped = wrapped
        self.syncMicroseconds = syncMicroseconds
    }

    func sync() throws { simulatedSyncSleep(microseconds: syncMicroseconds) }
}

// glibc's timerfd calls (<sys/timerfd.h> is not in Swift's Glibc module).
@_silgen_name("timerfd_create") private func timerfd_create(_ clock: Int32, _ flags: Int32) -> Int32
@_silgen_name("timerfd_settime")
private func timerfd_settime(_ timer: Int32, _ flags: Int32, _ new: UnsafePointer<itimerspec>,
                             _ old: UnsafeMutablePointer<itimerspec>?) -> Int32

/// Sleeps `microseconds` on a timerfd: nanosleep would add the thread's timer slack (50 us by
/// default), stretching a 120 us "fdatasync" to about 170 us before the wake-up itself.
private func simulatedSyncSleep(microseconds: Int) {
    let timer = timerfd_create(Int32(CLOCK_MONOTONIC), 0)
    guard timer >= 0 else {
        usleep(UInt32(microseconds))
        return
    }
    defer { close(timer) }
    var setting = itimerspec()
    setting.it_value.tv_sec = microseconds / 1_000_000
    setting.it_value.tv_nsec = (microseconds % 1_000_000) * 1_000
    guard timerfd_settime(timer, 0, &setting, nil) == 0 else {
        usleep(UInt32(microseconds))
        return
    }
    var expirations: UInt64 = 0
    _ = read(timer, &expirations, MemoryLayout<UInt64>.size)
}
