// The real file system, wrapped once with swift-system: EINTR is retried, partial writes are
// completed or reported as errors, and the directory is synced after create, rename and unlink.

import Foundation
import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

public struct PosixFileSystem: FileSystem {
    public init() {}

    public func open(_ path: FilePath, mode: FileOpenMode) throws -> any LedgerFile {
        let existed = exists(path)
        let descriptor: FileDescriptor
        do {
            switch mode {
            case .readOnly:
                descriptor = try FileDescriptor.open(path, .readOnly, options: [.closeOnExec], retryOnInterrupt: true)
            case .readWrite:
                descriptor = try FileDescriptor.open(path, .readWrite, options: [.closeOnExec], retryOnInterrupt: true)
            case .createReadWrite:
                descriptor = try FileDescriptor.open(
                    path, .readWrite, options: [.create, .closeOnExec],
                    permissions: [.ownerReadWrite, .groupRead, .otherRead], retryOnInterrupt: true)
            }
        } catch {
            throw Self.mapped(error, path: path)
        }
        if mode == .createReadWrite && !existed {
            try syncDirectory(path.removingLastComponent())
        }
        return PosixFile(descriptor: descriptor, path: path)
    }

    public func exists(_ path: FilePath) -> Bool {
        var info = stat()
        return path.withPlatformString { stat($0, &info) } == 0
    }

    public func contentsOfDirectory(_ path: FilePath) throws -> [String] {
        guard let directory = path.withPlatformString({ opendir($0) }) else {
            throw LedgerStorageError(.io(errno: errno), "cannot list directory", location: LogLocation(file: path.string))
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    public func createDirectory(_ path: FilePath) throws {
        if exists(path) { return }
        let parent = path.removingLastComponent()
        if !parent.isEmpty && parent != path && !exists(parent) { try createDirectory(parent) }
        let result = path.withPlatformString { mkdir($0, 0o755) }
        if result != 0 && errno != EEXIST {
            throw LedgerStorageError(.io(errno: errno), "cannot create directory", location: LogLocation(file: path.string))
        }
        if !parent.isEmpty { try syncDirectory(parent) }
    }

    public func remove(_ path: FilePath) throws {
        let result = path.withPlatformString { unlink($0) }
        if result != 0 {
            throw LedgerStorageError(.io(errno: errno), "cannot remove file", location: LogLocation(file: path.string))
        }
        try syncDirectory(path.removingLastComponent())
    }

    public func rename(_ source: FilePath, to destination: FilePath) throws {
        let result = source.withPlatformString { s in destination.withPlatformString { d in posixRename(s, d) } }
        if result != 0 {
            throw LedgerStorageError(.io(errno: errno), "cannot rename to \(destination.string)", location: LogLocation(file: source.string))
        }
        try syncDirectory(destination.removingLastComponent())
    }

    public func syncDirectory(_ path: FilePath) throws {
        let directory = path.isEmpty ? FilePath(".") : path
        do {
            let descriptor = try FileDescriptor.open(directory, .readOnly, options: [.directory, .closeOnExec], retryOnInterrupt: true)
            defer { try? descriptor.close() }
            try Self.retryingInterrupt { fsync(descriptor.rawValue) }
        } catch {
            throw Self.mapped(error, path: directory)
        }
    }

    public func lockExclusive(_ path: FilePath) throws -> (any LedgerFileLock)? {
        let file = try open(path, mode: .createReadWrite) as! PosixFile
        // flock locks belong to the open file description, so a second open in this same process
        // conflicts too (fcntl locks would not).
        var result: Int32
        repeat { result = flock(file.descriptor.rawValue, LOCK_EX | LOCK_NB) } while result != 0 && errno == EINTR
        if result != 0 {
            let code = errno
            try? file.close()
            if code == EWOULDBLOCK { return nil }
            throw LedgerStorageError(.io(errno: code), "cannot lock", location: LogLocation(file: path.string))
        }
        return PosixFileLock(file: file)
    }

    static func retryingInterrupt(_ call: () -> Int32) throws {
        while true {
            if call() == 0 { return }
            if errno == EINTR { continue }
            throw Errno(rawValue: errno)
        }
    }

    static func mapped(_ error: Error, path: FilePath) -> LedgerStorageError {
        if let storageError = error as? LedgerStorageError { return storageError }
        let location = LogLocation(file: path.string)
        if let errnoValue = error as? Errno {
            if errnoValue == .noSpace { return LedgerStorageError(.noSpace, "no space left on device", location: location) }
            return LedgerStorageError(.io(errno: errnoValue.rawValue), "\(errnoValue)", location: location)
        }
        return LedgerStorageError(.io(errno: EIO), "\(error)", location: location)
    }
}

/// A POSIX file descriptor. Thread-safe in the sense of pread/pwrite; close once. A file dropped
/// without `close` (a reader's cursor left before the end of a segment) closes its descriptor when it
/// goes away, so readers that stop early do not leak descriptors.
final class PosixFile: LedgerFile, @unchecked Sendable {
    let descriptor: FileDescriptor
    let path: FilePath
    private let closing = NSLock()
    private var isClosed = false

    init(descriptor: FileDescriptor, path: FilePath) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit {
        if !isClosed { try? descriptor.close() }
    }

    func read(at offset: UInt64, count: Int) throws -> [UInt8] {
        // No zero-fill: the array's count is what the reads filled (short at end of file).
        var failure: (any Error)?
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var filled = 0
            do {
                while filled < count {
                    let chunk = UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(buffer)[filled...])
                    let got = try descriptor.read(fromAbsoluteOffset: Int64(offset) + Int64(filled), into: chunk, retryOnInterrupt: true)
                    if got == 0 { break }
                    filled += got
                }
            } catch {
                failure = error
            }
            initialized = filled
        }
        if let failure { throw PosixFileSystem.mapped(failure, path: path) }
        return bytes
    }

    func write(_ bytes: [UInt8], at offset: UInt64) throws {
        do {
            // writeAll loops over short writes and retries EINTR; any error it meets is thrown.
            _ = try descriptor.writeAll(toAbsoluteOffset: Int64(offset), bytes)
        } catch {
            throw PosixFileSystem.mapped(error, path: path)
        }
    }

    func size() throws -> UInt64 {
        var info = stat()
        if fstat(descriptor.rawValue, &info) != 0 { throw PosixFileSystem.mapped(Errno(rawValue: errno), path: path) }
        return UInt64(info.st_size)
    }

    func truncate(to size: UInt64) throws {
        do { try descriptor.resize(to: Int64(size), retryOnInterrupt: true) } catch { throw PosixFileSystem.mapped(error, path: path) }
    }

    func sync() throws {
        do {
            #if os(Linux)
            try PosixFileSystem.retryingInterrupt { fdatasync(descriptor.rawValue) }
            #else
            try PosixFileSystem.retryingInterrupt { fsync(descriptor.rawValue) }
            #endif
        } catch {
            throw PosixFileSystem.mapped(error, path: path)
        }
    }

    func close() throws {
        closing.withLock { isClosed = true }
        do { try descriptor.close() } catch { throw PosixFileSystem.mapped(error, path: path) }
    }
}

final class PosixFileLock: LedgerFileLock, @unchecked Sendable {
    let posixFile: PosixFile
    var file: any LedgerFile { posixFile }

    init(file: PosixFile) { self.posixFile = file }

    func release() {
        _ = flock(posixFile.descriptor.rawValue, LOCK_UN)
        try? posixFile.close()
    }
}

private func posixRename(_ source: UnsafePointer<CChar>, _ destination: UnsafePointer<CChar>) -> Int32 {
    #if canImport(Glibc)
    return Glibc.rename(source, destination)
    #else
    return Darwin.rename(source, destination)
    #endif
}
