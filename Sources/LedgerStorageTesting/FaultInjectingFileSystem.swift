// An in-memory file system that injects the failures storage code must survive: short writes,
// ENOSPC, fsync failures, a crash that keeps only synced bytes plus a random prefix of the
// unsynced ones, and bit flips. Thread-safe: every operation takes one lock.
//
// Simplification: directory operations (create, rename, remove) are durable at once; only file
// contents distinguish synced from unsynced bytes.

import Foundation
import LedgerStorage
import SystemPackage

package final class FaultInjectingFileSystem: FileSystem, @unchecked Sendable {
    final class Node {
        var bytes: [UInt8] = []
        /// The contents as of the last successful sync.
        var syncedBytes: [UInt8] = []
    }

    private let lock = NSLock()
    private var files: [String: Node] = [:]
    private var directories: Set<String> = ["/", "."]
    private var lockedPaths: Set<String> = []
    /// Incremented by `crash`; handles opened before a crash fail afterwards, like a dead process's.
    private var epoch = 0
    private var listings = 0

    /// How many times a directory was listed (`contentsOfDirectory`), for tests of what a reader costs.
    package var directoryListings: Int { withLock { listings } }

    // Fault switches, read and written under `lock`.
    private var syncFailuresPending = 0
    private var shortWritesPending = 0
    private var writeBytesBudget: Int?

    package init() {}

    // MARK: Fault controls.

    /// The next `count` syncs fail with EIO (and make nothing durable).
    package func failNextSyncs(_ count: Int = 1) { withLock { syncFailuresPending += count } }

    /// The next `count` writes store only half of their bytes, then fail with EIO.
    package func shortenNextWrites(_ count: Int = 1) { withLock { shortWritesPending += count } }

    /// After `bytes` more bytes have been written, writes store what fits and fail with ENOSPC.
    /// Pass nil to lift the limit.
    package func limitSpace(toMoreBytes bytes: Int?) { withLock { writeBytesBudget = bytes } }

    /// Simulates power loss: each file keeps its synced bytes plus a random prefix of what was
    /// appended after the last sync; locks are dropped and open handles stop working.
    package func crash(seed: UInt64) {
        withLock {
            var generator = SeededGenerator(seed: seed)
            // In path order: a dictionary's order differs between instances, and the seed must
            // decide the same prefixes every time.
            for (_, node) in files.sorted(by: { $0.key < $1.key }) {
                let synced = node.syncedBytes
                if node.bytes.count > synced.count && node.bytes.starts(with: synced) {
                    let unsynced = node.bytes.count - synced.count
                    let kept = Int.random(in: 0...unsynced, using: &generator)
                    node.bytes = Array(node.bytes.prefix(synced.count + kept))
                } else if node.bytes.count >= synced.count, node.bytes != synced {
                    // Unsynced writes over synced bytes (a batch over preallocated zeros): the new
                    // bytes reached the disk up to a random point from the first change, the old ones
                    // stayed after it, so a batch can be torn inside space that was already there.
                    let firstChange = (0..<synced.count).first { node.bytes[$0] != synced[$0] } ?? synced.count
                    let cut = Int.random(in: firstChange...node.bytes.count, using: &generator)
                    node.bytes = Array(node.bytes.prefix(cut)) + (cut < synced.count ? Array(synced[cut...]) : [])
                } else {
                    node.bytes = synced
                }
                node.syncedBytes = node.bytes
            }
            lockedPaths.removeAll()
            epoch += 1
        }
    }

    /// Bytes written but not yet made durable by a sync (a crash may lose them), over the files
    /// whose path ends with `suffix` (all files by default).
    package func unsyncedByteCount(inFilesEndingWith suffix: String = "") -> Int {
        withLock {
            files.filter { $0.key.hasSuffix(suffix) }.values.reduce(0) { total, node in
                total + (node.bytes == node.syncedBytes ? 0 : max(1, node.bytes.count - node.syncedBytes.count))
            }
        }
    }

    /// Flips one bit of a file in place (and in its durable image).
    package func flipBit(_ path: FilePath, byteOffset: Int, bit: Int) {
        withLock {
            // trap-safe: test support: tests flip bits of files they created
            guard let node = files[path.string] else { preconditionFailure("no file \(path)") }
            node.bytes[byteOffset] ^= UInt8(1) << UInt8(bit)
            node.syncedBytes = node.bytes
        }
    }

    /// The current contents of a file, or nil when it does not exist.
    package func contents(of path: FilePath) -> [UInt8]? { withLock { files[path.string]?.bytes } }

    /// Replaces the contents of a file (durably), creating it when needed.
    package func setContents(of path: FilePath, to bytes: [UInt8]) {
        withLock {
            let node = files[path.string] ?? Node()
            node.bytes = bytes
            node.syncedBytes = bytes
            files[path.string] = node
        }
    }

    // MARK: FileSystem.

    package func open(_ path: FilePath, mode: FileOpenMode) throws -> any LedgerFile {
        try withLock {
            if let node = files[path.string] { return MemoryFile(node: node, fileSystem: self, epoch: epoch, path: path.string) }
            guard mode == .createReadWrite else {
                throw LedgerStorageError(.io(errno: ENOENT), "no such file", location: LogLocation(file: path.string))
            }
            guard directories.contains(parentPath(path)) else {
                throw LedgerStorageError(.io(errno: ENOENT), "no such directory", location: LogLocation(file: path.string))
            }
            let node = Node()
            files[path.string] = node
            return MemoryFile(node: node, fileSystem: self, epoch: epoch, path: path.string)
        }
    }

    package func exists(_ path: FilePath) -> Bool {
        withLock { files[path.string] != nil || directories.contains(path.string) }
    }

    package func contentsOfDirectory(_ path: FilePath) throws -> [String] {
        try withLock {
            listings += 1
            guard directories.contains(path.string) else {
                throw LedgerStorageError(.io(errno: ENOENT), "no such directory", location: LogLocation(file: path.string))
            }
            let prefix = path.string.hasSuffix("/") ? path.string : path.string + "/"
            let names = (Array(files.keys) + Array(directories)).compactMap { key -> String? in
                guard key.hasPrefix(prefix) else { return nil }
                let rest = key.dropFirst(prefix.count)
                return rest.isEmpty || rest.contains("/") ? nil : String(rest)
            }
            return names
        }
    }

    package func createDirectory(_ path: FilePath) throws {
        withLock {
            var current = path
            while !current.isEmpty && current.string != "/" {
                directories.insert(current.string)
                current = current.removingLastComponent()
            }
        }
    }

    package func remove(_ path: FilePath) throws {
        try withLock {
            guard files.removeValue(forKey: path.string) != nil else {
                throw LedgerStorageError(.io(errno: ENOENT), "no such file", location: LogLocation(file: path.string))
            }
        }
    }

    package func rename(_ source: FilePath, to destination: FilePath) throws {
        try withLock {
            guard let node = files.removeValue(forKey: source.string) else {
                throw LedgerStorageError(.io(errno: ENOENT), "no such file", location: LogLocation(file: source.string))
            }
            files[destination.string] = node
        }
    }

    package func syncDirectory(_ path: FilePath) throws {}

    package func lockExclusive(_ path: FilePath) throws -> (any LedgerFileLock)? {
        let file = try open(path, mode: .createReadWrite)
        return withLock { () -> (any LedgerFileLock)? in
            if lockedPaths.contains(path.string) { return nil }
            lockedPaths.insert(path.string)
            return MemoryLock(file: file, fileSystem: self, path: path.string, epoch: epoch)
        }
    }

    // MARK: Internals used by the handles.

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    private func parentPath(_ path: FilePath) -> String {
        let parent = path.removingLastComponent().string
        return parent.isEmpty ? "." : parent
    }

    fileprivate func checkEpoch(_ handleEpoch: Int, path: String) throws {
        if handleEpoch != epoch {
            throw LedgerStorageError(.io(errno: EIO), "handle opened before a simulated crash", location: LogLocation(file: path))
        }
    }

    fileprivate func write(node: Node, bytes: [UInt8], at offset: Int, epoch handleEpoch: Int, path: String) throws {
        try withLock {
            try checkEpoch(handleEpoch, path: path)
            var toWrite = bytes
            var failure: LedgerStorageError?
            if shortWritesPending > 0 {
                shortWritesPending -= 1
                toWrite = Array(bytes.prefix(bytes.count / 2))
                failure = LedgerStorageError(.io(errno: EIO), "injected short write", location: LogLocation(file: path, byteOffset: UInt64(offset)))
            }
            if let budget = writeBytesBudget, toWrite.count > budget {
                toWrite = Array(toWrite.prefix(budget))
                failure = LedgerStorageError(.noSpace, "injected ENOSPC", location: LogLocation(file: path, byteOffset: UInt64(offset)))
            }
            if let budget = writeBytesBudget { writeBytesBudget = budget - toWrite.count }
            if node.bytes.count < offset { node.bytes.append(contentsOf: repeatElement(0, count: offset - node.bytes.count)) }
            let overlap = min(toWrite.count, node.bytes.count - offset)
            node.bytes.replaceSubrange(offset..<(offset + overlap), with: toWrite.prefix(overlap))
            node.bytes.append(contentsOf: toWrite.dropFirst(overlap))
            if let failure { throw failure }
        }
    }

    fileprivate func sync(node: Node, epoch handleEpoch: Int, path: String) throws {
        try withLock {
            try checkEpoch(handleEpoch, path: path)
            if syncFailuresPending > 0 {
                syncFailuresPending -= 1
                throw LedgerStorageError(.io(errno: EIO), "injected fsync failure", location: LogLocation(file: path))
            }
            node.syncedBytes = node.bytes
        }
    }

    fileprivate func unlock(path: String, epoch lockEpoch: Int) {
        withLock { if lockEpoch == epoch { lockedPaths.remove(path) } }
    }
}

private final class MemoryFile: LedgerFile, @unchecked Sendable {
    let node: FaultInjectingFileSystem.Node
    let fileSystem: FaultInjectingFileSystem
    let epoch: Int
    let path: String

    init(node: FaultInjectingFileSystem.Node, fileSystem: FaultInjectingFileSystem, epoch: Int, path: String) {
        self.node = node
        self.fileSystem = fileSystem
        self.epoch = epoch
        self.path = path
    }

    func read(at offset: UInt64, count: Int) throws -> [UInt8] {
        fileSystem.withLock {
            let start = min(Int(offset), node.bytes.count)
            let end = min(start + count, node.bytes.count)
            return Array(node.bytes[start..<end])
        }
    }

    func write(_ bytes: [UInt8], at offset: UInt64) throws {
        try fileSystem.write(node: node, bytes: bytes, at: Int(offset), epoch: epoch, path: path)
    }

    func size() throws -> UInt64 { fileSystem.withLock { UInt64(node.bytes.count) } }

    func truncate(to size: UInt64) throws {
        try fileSystem.withLock {
            try fileSystem.checkEpoch(epoch, path: path)
            if node.bytes.count > Int(size) { node.bytes.removeLast(node.bytes.count - Int(size)) }
            else { node.bytes.append(contentsOf: repeatElement(0, count: Int(size) - node.bytes.count)) }
        }
    }

    func sync() throws { try fileSystem.sync(node: node, epoch: epoch, path: path) }

    func close() throws {}
}

private final class MemoryLock: LedgerFileLock, @unchecked Sendable {
    let file: any LedgerFile
    let fileSystem: FaultInjectingFileSystem
    let path: String
    let epoch: Int

    init(file: any LedgerFile, fileSystem: FaultInjectingFileSystem, path: String, epoch: Int) {
        self.file = file
        self.fileSystem = fileSystem
        self.path = path
        self.epoch = epoch
    }

    func release() { fileSystem.unlock(path: path, epoch: epoch) }
}
