import CatalogModel
import LedgerStorage
import Logging
import SystemPackage

/// Lists, reads and writes snapshot files through the storage `FileSystem` seam. Writes are
/// crash-safe: a temporary file is written and synced, then renamed into place (the rename
/// syncs the directory). Thread-safe: it holds no mutable state.
struct SnapshotStore: Sendable {
    let directory: FilePath
    let fileSystem: any FileSystem

    /// Every readable snapshot header, oldest first. Damaged files are skipped and reported to the logger.
    func infos(logger: Logger? = nil) -> [SnapshotInfo] {
        guard fileSystem.exists(directory), let names = try? fileSystem.contentsOfDirectory(directory) else { return [] }
        var infos: [SnapshotInfo] = []
        for name in names.sorted() where name.hasSuffix("." + SnapshotFile.fileExtension) {
            do {
                let file = try fileSystem.open(directory.appending(name), mode: .readOnly)
                defer { try? file.close() }
                let head = try file.read(at: 0, count: 64 << 10)
                infos.append(try SnapshotFile.decodeInfo(head, name: name))
            } catch {
                logger?.warning("ignoring unreadable snapshot", metadata: ["file": "\(name)", "error": "\(error)"])
            }
        }
        return infos.sorted { $0.sequence < $1.sequence }
    }

    /// The newest snapshot among `infos` that `admits` accepts and that reads back intact; a damaged
    /// one is reported to the logger and the next older one is tried.
    /// Without `includeDedupe` only the header and the state are read (what an as-of query needs).
    func newestReadable(among infos: [SnapshotInfo], admits: (SnapshotInfo) -> Bool = { _ in true },
                        includeDedupe: Bool = true, logger: Logger? = nil) -> SnapshotFile? {
        for info in infos.reversed() where admits(info) {
            do {
                return try read(sequence: info.sequence, includeDedupe: includeDedupe)
            } catch {
                logger?.warning("snapshot unreadable; trying an older one", metadata: ["error": "\(error)"])
            }
        }
        return nil
    }

    func read(sequence: UInt64, includeDedupe: Bool = true) throws -> SnapshotFile {
        let name = SnapshotFile.fileName(sequence: sequence)
        let file = try fileSystem.open(directory.appending(name), mode: .readOnly)
        defer { try? file.close() }
        let size = Int(try file.size())
        var length = size
        if !includeDedupe {
            let head = try file.read(at: 0, count: min(size, 64 << 10))
            length = min(size, try SnapshotFile.prefixLength(head: head, name: name))
        }
        let bytes = try file.read(at: 0, count: length)
        return try SnapshotFile.decode(bytes, name: name, includeDedupe: includeDedupe)
    }

    func write(_ snapshot: SnapshotFile) throws {
        try fileSystem.createDirectory(directory)
        let name = SnapshotFile.fileName(sequence: snapshot.info.sequence)
        let temporary = directory.appending(name + ".tmp")
        let bytes = try snapshot.encoded()
        let file = try fileSystem.open(temporary, mode: .createReadWrite)
        do {
            try file.truncate(to: 0)
            try file.write(bytes, at: 0)
            try file.sync()
            try file.close()
        } catch {
            try? file.close()
            try? fileSystem.remove(temporary)
            throw error
        }
        try fileSystem.rename(temporary, to: directory.appending(name))
    }

    /// Removes the snapshots an earlier build wrote in an earlier format (magic `CLSNAP01`,
    /// `CLSNAP02`): their states were folded under an earlier join rule, and like any snapshot they
    /// are disposable. Returns how many were removed.
    func removeEarlierVersions(logger: Logger?) throws -> Int {
        guard fileSystem.exists(directory) else { return 0 }
        var removed = 0
        for name in try fileSystem.contentsOfDirectory(directory).sorted() where name.hasSuffix("." + SnapshotFile.fileExtension) {
            let path = directory.appending(name)
            let head: [UInt8]
            do {
                let file = try fileSystem.open(path, mode: .readOnly)
                defer { try? file.close() }
                head = try file.read(at: 0, count: SnapshotFile.magic.count)
            } catch {
                continue
            }
            guard head.count == SnapshotFile.magic.count, head != SnapshotFile.magic,
                  head.starts(with: Array("CLSNAP".utf8)) else { continue }
            try fileSystem.remove(path)
            removed += 1
            logger?.info("removed a snapshot of an earlier format", metadata: ["file": "\(name)"])
        }
        return removed
    }

    func remove(sequence: UInt64) throws {
        try fileSystem.remove(directory.appending(SnapshotFile.fileName(sequence: sequence)))
    }

    /// Removes all but the newest `keep` snapshots.
    func prune(keep: Int) throws {
        let all = infos()
        guard all.count > keep else { return }
        for info in all.dropLast(keep) {
            try fileSystem.remove(directory.appending(SnapshotFile.fileName(sequence: info.sequence)))
        }
    }
}
