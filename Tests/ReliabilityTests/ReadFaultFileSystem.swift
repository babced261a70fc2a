// A FileSystem wrapper that injects read faults, which FaultInjectingFileSystem does not model:
// a read that fails with EIO part-way (what PosixFileSystem reports when pread fails), and, when
// enabled, a short read (fewer bytes than asked before the end of the file). Everything else is
// forwarded to the wrapped file system.
//
// Thread-safety: the fault state is guarded by one lock; the wrapped file system is thread-safe.

import Foundation
import LedgerStorage
import LedgerStorageTesting
import SystemPackage

final class ReadFaultFileSystem: ForwardingFileSystem, @unchecked Sendable {
    enum ReadFault: Sendable, Equatable {
        /// The read throws EIO.
        case error
        /// The read returns only the first half of what it could (never at end of file).
        case short
    }

    let base: FaultInjectingFileSystem
    var baseFileSystem: any FileSystem { base }
    private let lock = NSLock()
    /// Reads still to pass before the next fault fires, and which fault.
    private var armed: (readsToSkip: Int, fault: ReadFault)?
    private(set) var faultsFired = 0

    init(base: FaultInjectingFileSystem) { self.base = base }

    /// The read after `readsToSkip` more successful reads fails with `fault`.
    func armReadFault(_ fault: ReadFault, afterReads readsToSkip: Int) {
        lock.withLock { armed = (readsToSkip, fault) }
    }

    func disarm() { lock.withLock { armed = nil } }

    /// The fault to apply to the read happening now, if any.
    fileprivate func takeFault() -> ReadFault? {
        lock.withLock {
            guard let current = armed else { return nil }
            if current.readsToSkip > 0 {
                armed = (current.readsToSkip - 1, current.fault)
                return nil
            }
            armed = nil
            faultsFired += 1
            return current.fault
        }
    }

    func open(_ path: FilePath, mode: FileOpenMode) throws -> any LedgerFile {
        ReadFaultFile(wrapped: try base.open(path, mode: mode), fileSystem: self, path: path.string)
    }
}

private final class ReadFaultFile: ForwardingLedgerFile, @unchecked Sendable {
    let wrapped: any LedgerFile
    let fileSystem: ReadFaultFileSystem
    let path: String

    init(wrapped: any LedgerFile, fileSystem: ReadFaultFileSystem, path: String) {
        self.wrapped = wrapped
        self.fileSystem = fileSystem
        self.path = path
    }

    func read(at offset: UInt64, count: Int) throws -> [UInt8] {
        let bytes = try wrapped.read(at: offset, count: count)
        switch fileSystem.takeFault() {
        case nil: return bytes
        case .error:
            throw LedgerStorageError(.io(errno: EIO), "injected read error", location: LogLocation(file: path, byteOffset: offset))
        case .short:
            return bytes.count > 1 ? Array(bytes.prefix(bytes.count / 2)) : bytes
        }
    }
}
