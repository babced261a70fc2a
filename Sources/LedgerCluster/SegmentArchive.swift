// The segment archive in PostgreSQL (docs/SCALING.md, "The segment archive"): a merchant's owner
// ships its ledger's log segments here, content-addressed by SHA-256, under its lease epoch (a file
// the archive holds a prefix of as the range after it); a node that takes the merchant over restores
// the ledger from the last shipment, every blob verified against its hash and every file against its
// own. Bytes only: which files make a ledger is the caller's business.

import Crypto
import Foundation
import Logging
import PostgresNIO

/// One segment file of a shipment (or of a restore).
public struct ArchiveFile: Sendable, Equatable {
    /// The file's name in the log's segments directory.
    public var name: String
    /// SHA-256 of the whole file.
    public var sha256: [UInt8]
    /// The whole file's length.
    public var byteCount: Int64
    /// A sealed segment never changes; the active one grows, and is shipped as ranges.
    public var sealed: Bool
    /// What a shipment sends: the whole file's bytes, or (with `rangeStart`) the bytes after the prefix
    /// the archive holds; nil: nothing sent (see `keepArchived`). After a restore: the whole file.
    public var bytes: [UInt8]?
    /// With `bytes`: they are the file's bytes from this offset on, appended to the `rangeStart` bytes
    /// the archive holds as `prefixSHA256`.
    public var rangeStart: Int64?
    public var prefixSHA256: [UInt8]?
    /// Without `bytes`: the archive's copy of the file (whole or ranged) is kept as it is, and must be
    /// `sha256` and `byteCount`. false: the archive holds a blob of `sha256` (a sealed segment shipped before).
    public var keepArchived = false
    /// After a restore: the ranges the file is archived as (0: one whole blob).
    public var rangeCount = 0

    public init(name: String, bytes: [UInt8], sealed: Bool) {
        self.init(name: name, bytes: bytes, sha256: SegmentArchive.sha256(bytes), sealed: sealed)
    }

    /// The whole file, its SHA-256 already computed by the caller.
    public init(name: String, bytes: [UInt8], sha256: [UInt8], sealed: Bool) {
        self.name = name
        self.sha256 = sha256
        self.byteCount = Int64(bytes.count)
        self.sealed = sealed
        self.bytes = bytes
    }

    /// A file the archive already holds whole under `sha256`: its bytes are not sent again.
    public init(name: String, archivedSHA256 sha256: [UInt8], byteCount: Int64, sealed: Bool) {
        self.name = name
        self.sha256 = sha256
        self.byteCount = byteCount
        self.sealed = sealed
        self.bytes = nil
    }

    /// A file the archive holds as it is now (whole or as ranges): kept, nothing sent.
    public static func unchanged(name: String, sha256: [UInt8], byteCount: Int64, sealed: Bool) -> ArchiveFile {
        var file = ArchiveFile(name: name, archivedSHA256: sha256, byteCount: byteCount, sealed: sealed)
        file.keepArchived = true
        return file
    }

    /// A file the archive holds the first `start` bytes of (as `prefixSHA256`): `bytes` follow them;
    /// `sha256` is the whole file's.
    public static func appended(name: String, prefixSHA256: [UInt8], start: Int64, bytes: [UInt8], sha256: [UInt8],
                                sealed: Bool) -> ArchiveFile {
        var file = ArchiveFile(name: name, bytes: bytes, sha256: sha256, sealed: sealed)
        file.byteCount = start + Int64(bytes.count)
        file.rangeStart = start
        file.prefixSHA256 = prefixSHA256
        return file
    }

    /// The bytes this shipment sends for the file (0: none).
    public var sentByteCount: Int { bytes?.count ?? 0 }
}

/// A merchant's last shipment.
public struct ArchiveShipment: Sendable, Equatable {
    public var merchantID: String
    /// The lease epoch it was shipped under.
    public var epoch: Int64
    public var nodeID: String
    /// By PostgreSQL's clock.
    public var shippedAt: Date
    /// Events in the shipped log.
    public var eventCount: Int64
    /// The inbox deliveries marked done with it (their events are in the shipped segments).
    public var inboxDoneThrough: Int64
    /// The files, by name.
    public var files: [ArchiveFile]
}

/// The `archive_*` tables. Thread-safe.
public struct SegmentArchive: Sendable {
    public let database: ClusterDatabase

    public init(database: ClusterDatabase) {
        self.database = database
    }

    private var logger: Logger { database.logger }

    public static func sha256(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }

    /// Replaces the merchant's archived log with `files`, records the shipment, and marks the
    /// merchant's inbox deliveries up to `inboxDoneThrough` done, in one transaction fenced by
    /// `epoch` (`ClusterDatabase.fenced`): a node that lost the lease ships nothing and marks nothing
    /// (`ClusterError.fenced`). A file named without bytes must be in the archive already (a blob of
    /// its SHA-256, or, kept, as named); a range must follow the prefix the archive holds. Segment bytes
    /// no file or range refers to any more (an earlier prefix of the active segment) are deleted.
    public func ship(merchant merchantID: String, epoch: Int64, nodeID: String, files: [ArchiveFile], eventCount: Int64,
                     inboxDoneThrough: Int64) async throws {
        guard Set(files.map(\.name)).count == files.count else {
            throw ClusterError.invalidArgument("a shipment names each file once")
        }
        try await database.fenced(merchant: merchantID, epoch: epoch) { [logger] connection in
            let previous = try await Self.referencedBlobs(connection, merchantID: merchantID, logger: logger)
            var archived: [String: (sha256: Data, byteCount: Int64, ranged: Bool)] = [:]
            for try await (name, hash, count, ranged) in try await connection.query(
                "SELECT name, sha256, byte_count, ranged FROM archive_files WHERE merchant_id = \(merchantID)", logger: logger)
                .decode((String, Data, Int64, Bool).self) {
                archived[name] = (hash, count, ranged)
            }
            for file in files {
                if let bytes = file.bytes {
                    let hash = file.rangeStart == nil ? file.sha256 : Self.sha256(bytes)
                    try await connection.query("""
                        INSERT INTO archive_blobs (sha256, bytes) VALUES (\(Data(hash)), \(Data(bytes))) ON CONFLICT DO NOTHING
                        """, logger: logger)
                } else if !file.keepArchived {
                    let held = try await connection.query("SELECT 1 FROM archive_blobs WHERE sha256 = \(Data(file.sha256))", logger: logger)
                    var found = false
                    for try await _ in held.decode(Int32.self) { found = true }
                    guard found else {
                        throw ClusterError.invalidArgument("segment \(file.name) is named by its SHA-256 but the archive does not hold it")
                    }
                }
                if file.keepArchived || file.rangeStart != nil {
                    // What the archive holds of the file must be what the shipper believes it holds.
                    let expected = file.rangeStart.map { ($0, file.prefixSHA256 ?? []) } ?? (file.byteCount, file.sha256)
                    guard let held = archived[file.name], held.byteCount == expected.0, held.sha256 == Data(expected.1) else {
                        throw ClusterError.invalidArgument("segment \(file.name) is not in the archive as the shipment names it")
                    }
                }
            }
            let names = files.map(\.name)
            // A file no longer shipped goes, its ranges with it (ON DELETE CASCADE).
            try await connection.query("""
                DELETE FROM archive_files WHERE merchant_id = \(merchantID) AND NOT (name = ANY(\(names)::text[]))
                """, logger: logger)
            for file in files {
                if file.keepArchived {
                    try await connection.query("""
                        UPDATE archive_files SET sealed = \(file.sealed) WHERE merchant_id = \(merchantID) AND name = \(file.name)
                        """, logger: logger)
                } else if let start = file.rangeStart, let bytes = file.bytes, let held = archived[file.name] {
                    if !held.ranged {
                        // The whole blob becomes the file's first range.
                        try await connection.query("""
                            INSERT INTO archive_ranges (merchant_id, name, start_byte, sha256, byte_count)
                            VALUES (\(merchantID), \(file.name), 0, \(held.sha256), \(held.byteCount))
                            """, logger: logger)
                    }
                    try await connection.query("""
                        INSERT INTO archive_ranges (merchant_id, name, start_byte, sha256, byte_count)
                        VALUES (\(merchantID), \(file.name), \(start), \(Data(Self.sha256(bytes))), \(Int64(bytes.count)))
                        """, logger: logger)
                    try await connection.query("""
                        UPDATE archive_files SET sha256 = \(Data(file.sha256)), byte_count = \(file.byteCount), sealed = \(file.sealed),
                            ranged = true
                        WHERE merchant_id = \(merchantID) AND name = \(file.name)
                        """, logger: logger)
                } else {
                    try await connection.query("""
                        DELETE FROM archive_ranges WHERE merchant_id = \(merchantID) AND name = \(file.name)
                        """, logger: logger)
                    try await connection.query("""
                        INSERT INTO archive_files (merchant_id, name, sha256, byte_count, sealed, ranged)
                        VALUES (\(merchantID), \(file.name), \(Data(file.sha256)), \(file.byteCount), \(file.sealed), false)
                        ON CONFLICT (merchant_id, name) DO UPDATE SET
                            sha256 = EXCLUDED.sha256, byte_count = EXCLUDED.byte_count, sealed = EXCLUDED.sealed, ranged = false
                        """, logger: logger)
                }
            }
            let current = try await Self.referencedBlobs(connection, merchantID: merchantID, logger: logger)
            for hash in previous.subtracting(current) {
                try await connection.query("""
                    DELETE FROM archive_blobs b WHERE b.sha256 = \(hash)
                      AND NOT EXISTS (SELECT 1 FROM archive_files f WHERE f.sha256 = b.sha256 AND NOT f.ranged)
                      AND NOT EXISTS (SELECT 1 FROM archive_ranges r WHERE r.sha256 = b.sha256)
                    """, logger: logger)
            }
            try await connection.query("""
                INSERT INTO archive_shipments (merchant_id, epoch, node_id, shipped_at, event_count, inbox_done_through)
                VALUES (\(merchantID), \(epoch), \(nodeID), clock_timestamp(), \(eventCount), \(inboxDoneThrough))
                ON CONFLICT (merchant_id) DO UPDATE SET epoch = EXCLUDED.epoch, node_id = EXCLUDED.node_id,
                    shipped_at = EXCLUDED.shipped_at, event_count = EXCLUDED.event_count,
                    inbox_done_through = GREATEST(archive_shipments.inbox_done_through, EXCLUDED.inbox_done_through)
                """, logger: logger)
            if inboxDoneThrough > 0 {
                try await connection.query("""
                    UPDATE webhook_inbox SET done_at = clock_timestamp(), done_epoch = \(epoch)
                    WHERE merchant_id = \(merchantID) AND id <= \(inboxDoneThrough) AND done_at IS NULL
                    """, logger: logger)
            }
        }
    }

    /// The blobs the merchant's archived files refer to: whole files' and ranges'.
    private static func referencedBlobs(_ connection: PostgresConnection, merchantID: String, logger: Logger) async throws -> Set<Data> {
        var hashes = Set<Data>()
        for try await hash in try await connection.query("""
            SELECT sha256 FROM archive_files WHERE merchant_id = \(merchantID) AND NOT ranged
            UNION SELECT sha256 FROM archive_ranges WHERE merchant_id = \(merchantID)
            """, logger: logger).decode(Data.self) {
            hashes.insert(hash)
        }
        return hashes
    }

    /// The merchant's last shipment, its files without their bytes; nil when nothing was shipped.
    public func latest(merchant merchantID: String) async throws -> ArchiveShipment? {
        try await database.query { [logger] connection in
            try await Self.shipment(connection, merchantID: merchantID, logger: logger)
        }
    }

    /// The merchant's last shipment with every file's bytes: a whole file checked against its
    /// SHA-256 and length, a ranged one range by range (each against its own SHA-256 and length, each
    /// starting where the one before ended) and then as a whole. A mismatch is
    /// `ClusterError.archiveDamaged`, naming the file (and the range); nil when nothing was shipped.
    public func restore(merchant merchantID: String) async throws -> ArchiveShipment? {
        try await database.transaction { [logger] connection in
            guard var shipment = try await Self.shipment(connection, merchantID: merchantID, logger: logger) else { return nil }
            for index in shipment.files.indices {
                let file = shipment.files[index]
                let damaged = { (what: String) in ClusterError.archiveDamaged("merchant \"\(merchantID)\": segment \(file.name) \(what)") }
                var bytes: [UInt8] = []
                if file.rangeCount > 0 {
                    let ranges = try await connection.query("""
                        SELECT start_byte, sha256, byte_count FROM archive_ranges WHERE merchant_id = \(merchantID) AND name = \(file.name)
                        ORDER BY start_byte
                        """, logger: logger)
                    var list: [(start: Int64, sha256: Data, byteCount: Int64)] = []
                    for try await range in ranges.decode((Int64, Data, Int64).self) { list.append(range) }
                    for range in list {
                        guard range.start == Int64(bytes.count) else { throw damaged("has a gap or an overlap at byte \(bytes.count)") }
                        let part = try await Self.blob(connection, range.sha256, logger: logger)
                        guard let part else { throw damaged("is missing its range at byte \(range.start) from the archive") }
                        guard part.count == range.byteCount, Self.sha256(part) == Array(range.sha256) else {
                            throw damaged("range at byte \(range.start) does not match its SHA-256")
                        }
                        bytes += part
                    }
                    guard bytes.count == file.byteCount else { throw damaged("has \(bytes.count) of its \(file.byteCount) bytes (a range is missing)") }
                } else {
                    guard let whole = try await Self.blob(connection, Data(file.sha256), logger: logger) else {
                        throw damaged("is missing from the archive")
                    }
                    bytes = whole
                }
                guard bytes.count == file.byteCount, Self.sha256(bytes) == file.sha256 else {
                    throw damaged("does not match its SHA-256")
                }
                shipment.files[index].bytes = bytes
            }
            return shipment
        }
    }

    private static func blob(_ connection: PostgresConnection, _ sha256: Data, logger: Logger) async throws -> [UInt8]? {
        let rows = try await connection.query("SELECT bytes FROM archive_blobs WHERE sha256 = \(sha256)", logger: logger)
        var found: Data?
        for try await bytes in rows.decode(Data.self) { found = bytes }
        return found.map { Array($0) }
    }

    private static func shipment(_ connection: PostgresConnection, merchantID: String, logger: Logger) async throws -> ArchiveShipment? {
        let heads = try await connection.query("""
            SELECT epoch, node_id, shipped_at, event_count, inbox_done_through FROM archive_shipments WHERE merchant_id = \(merchantID)
            """, logger: logger)
        var shipment: ArchiveShipment?
        for try await (epoch, node, at, events, done) in heads.decode((Int64, String, Date, Int64, Int64).self) {
            shipment = ArchiveShipment(merchantID: merchantID, epoch: epoch, nodeID: node, shippedAt: at, eventCount: events,
                                       inboxDoneThrough: done, files: [])
        }
        guard var shipment else { return nil }
        let files = try await connection.query("""
            SELECT f.name, f.sha256, f.byte_count, f.sealed,
                   (SELECT count(*) FROM archive_ranges r WHERE r.merchant_id = f.merchant_id AND r.name = f.name)
            FROM archive_files f WHERE f.merchant_id = \(merchantID) ORDER BY f.name
            """, logger: logger)
        for try await (name, hash, count, sealed, ranges) in files.decode((String, Data, Int64, Bool, Int64).self) {
            var file = ArchiveFile(name: name, archivedSHA256: Array(hash), byteCount: count, sealed: sealed)
            file.rangeCount = Int(ranges)
            shipment.files.append(file)
        }
        return shipment
    }
}
