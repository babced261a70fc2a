// The segment archive in PostgreSQL (docs/SCALING.md, "The segment archive"): a merchant's owner
// ships its ledger's log segments here, content-addressed by SHA-256, under its lease epoch; a node
// that takes the merchant over restores the ledger from the last shipment, every segment verified
// against its hash. Bytes only: which files make a ledger is the caller's business.

import Crypto
import Foundation
import Logging
import PostgresNIO

/// One segment file of a shipment.
public struct ArchiveFile: Sendable, Equatable {
    /// The file's name in the log's segments directory.
    public var name: String
    /// SHA-256 of the bytes.
    public var sha256: [UInt8]
    public var byteCount: Int64
    /// A sealed segment never changes; the active one is shipped again (its durable prefix) as it grows.
    public var sealed: Bool
    /// The bytes; nil when the archive already holds them (a sealed segment shipped before).
    public var bytes: [UInt8]?

    public init(name: String, bytes: [UInt8], sealed: Bool) {
        self.name = name
        self.sha256 = SegmentArchive.sha256(bytes)
        self.byteCount = Int64(bytes.count)
        self.sealed = sealed
        self.bytes = bytes
    }

    /// A file the archive already holds under `sha256`: its bytes are not sent again.
    public init(name: String, archivedSHA256 sha256: [UInt8], byteCount: Int64, sealed: Bool) {
        self.name = name
        self.sha256 = sha256
        self.byteCount = byteCount
        self.sealed = sealed
        self.bytes = nil
    }
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
    /// (`ClusterError.fenced`). Files without bytes must be in the archive already. Segment bytes no
    /// shipment refers to any more (an earlier prefix of the active segment) are deleted.
    public func ship(merchant merchantID: String, epoch: Int64, nodeID: String, files: [ArchiveFile], eventCount: Int64,
                     inboxDoneThrough: Int64) async throws {
        guard Set(files.map(\.name)).count == files.count else {
            throw ClusterError.invalidArgument("a shipment names each file once")
        }
        try await database.fenced(merchant: merchantID, epoch: epoch) { [logger] connection in
            var previous: [Data] = []
            for try await hash in try await connection.query(
                "SELECT sha256 FROM archive_files WHERE merchant_id = \(merchantID)", logger: logger).decode(Data.self) {
                previous.append(hash)
            }
            for file in files {
                if let bytes = file.bytes {
                    try await connection.query("""
                        INSERT INTO archive_blobs (sha256, bytes) VALUES (\(Data(file.sha256)), \(Data(bytes))) ON CONFLICT DO NOTHING
                        """, logger: logger)
                }
            }
            let names = files.map(\.name)
            try await connection.query("""
                DELETE FROM archive_files WHERE merchant_id = \(merchantID) AND NOT (name = ANY(\(names)::text[]))
                """, logger: logger)
            for file in files {
                try await connection.query("""
                    INSERT INTO archive_files (merchant_id, name, sha256, byte_count, sealed)
                    VALUES (\(merchantID), \(file.name), \(Data(file.sha256)), \(file.byteCount), \(file.sealed))
                    ON CONFLICT (merchant_id, name) DO UPDATE SET
                        sha256 = EXCLUDED.sha256, byte_count = EXCLUDED.byte_count, sealed = EXCLUDED.sealed
                    """, logger: logger)
            }
            for hash in Set(previous).subtracting(files.map { Data($0.sha256) }) {
                try await connection.query("""
                    DELETE FROM archive_blobs b WHERE b.sha256 = \(hash)
                      AND NOT EXISTS (SELECT 1 FROM archive_files f WHERE f.sha256 = b.sha256)
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

    /// The merchant's last shipment, its files without their bytes; nil when nothing was shipped.
    public func latest(merchant merchantID: String) async throws -> ArchiveShipment? {
        try await database.query { [logger] connection in
            try await Self.shipment(connection, merchantID: merchantID, logger: logger)
        }
    }

    /// The merchant's last shipment with every file's bytes, each checked against its SHA-256 (a
    /// mismatch is `ClusterError.archiveDamaged`, naming the file); nil when nothing was shipped.
    public func restore(merchant merchantID: String) async throws -> ArchiveShipment? {
        try await database.transaction { [logger] connection in
            guard var shipment = try await Self.shipment(connection, merchantID: merchantID, logger: logger) else { return nil }
            for index in shipment.files.indices {
                let file = shipment.files[index]
                let rows = try await connection.query("SELECT bytes FROM archive_blobs WHERE sha256 = \(Data(file.sha256))", logger: logger)
                var found: Data?
                for try await bytes in rows.decode(Data.self) { found = bytes }
                guard let found else {
                    throw ClusterError.archiveDamaged("merchant \"\(merchantID)\": segment \(file.name) is missing from the archive")
                }
                let bytes = Array(found)
                guard bytes.count == file.byteCount, Self.sha256(bytes) == file.sha256 else {
                    throw ClusterError.archiveDamaged("merchant \"\(merchantID)\": segment \(file.name) does not match its SHA-256")
                }
                shipment.files[index].bytes = bytes
            }
            return shipment
        }
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
            SELECT name, sha256, byte_count, sealed FROM archive_files WHERE merchant_id = \(merchantID) ORDER BY name
            """, logger: logger)
        for try await (name, hash, count, sealed) in files.decode((String, Data, Int64, Bool).self) {
            shipment.files.append(ArchiveFile(name: name, archivedSHA256: Array(hash), byteCount: count, sealed: sealed))
        }
        return shipment
    }
}
