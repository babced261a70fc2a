// The single-writer lock of a ledger directory: an advisory flock on LOCK plus one line naming the
// holder, so a refused writer can say who holds it.

import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The writer lock of a log directory taken on its own, for maintenance that must not run beside a
/// writer but appends nothing (the CLI's `rebuild`, which swaps the projection file a running
/// server reads). Fails with `lockHeld`, naming the holder, exactly as opening a second writer does.
/// Release the returned lock when done.
package enum LogWriterLock {
    package static func acquire(directory path: FilePath, fileSystem: any FileSystem = PosixFileSystem()) throws -> any LedgerFileLock {
        try WriterLock.acquire(directory: LogDirectory(root: path, fileSystem: fileSystem),
                               now: LogWriterOptions.wallClockNanoseconds())
    }
}

enum WriterLock {
    static func acquire(directory: LogDirectory, now: Int64) throws -> any LedgerFileLock {
        guard let lock = try directory.fileSystem.lockExclusive(directory.lockPath) else {
            let holder = (try? directory.readWholeFile(directory.lockPath)).map(parseHolder) ?? LockHolder()
            throw LedgerStorageError(
                .lockHeld(holder), "another writer holds the ledger lock: \(holder)",
                location: LogLocation(file: LogFormat.lockFileName))
        }
        do {
            let line = Array("pid=\(getpid()) host=\(hostName()) since=\(now)\n".utf8)
            try lock.file.truncate(to: 0)
            try lock.file.write(line, at: 0)
            try lock.file.sync()
        } catch {
            lock.release()
            throw error
        }
        return lock
    }

    static func parseHolder(_ bytes: [UInt8]) -> LockHolder {
        var holder = LockHolder()
        let text = String(decoding: bytes, as: UTF8.self)
        for field in text.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
            let parts = field.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            switch parts[0] {
            case "pid": holder.pid = Int32(parts[1])
            case "host": holder.host = String(parts[1])
            case "since": holder.since = Int64(parts[1])
            default: break
            }
        }
        return holder
    }

    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "unknown" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
