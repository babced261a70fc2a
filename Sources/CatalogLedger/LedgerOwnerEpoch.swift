import Foundation

/// Cluster mode (docs/SCALING.md): the lease epoch under which a node appends to this ledger, kept in
/// `<root>/owner-epoch.json` (docs/FORMAT.md, "owner-epoch.json"). The node that takes a merchant over
/// with a new epoch writes it before it appends; it appends and ships the log to the segment archive
/// only while it holds that epoch's lease. A ledger directory whose epoch is not the one of the
/// archive's last shipment is stale (another node appended since) and is restored from the archive,
/// never shipped: a deposed owner's late appends are never taken in. A missing file: the ledger was
/// never served in cluster mode.
///
/// Small JSON, sorted keys, replaced atomically:
/// `{"epoch":3,"format":1,"merchant_id":"M1","node_id":"node-b","restored":{"epoch":2,"event_count":120,"shipped_at":"2026-11-27T09:00:00Z"}}`
/// (`restored` absent when the ledger was not restored from the archive at that takeover).
public struct LedgerOwnerEpoch: Sendable, Codable, Equatable {
    /// The shipment a takeover restored the ledger from.
    public struct Restored: Sendable, Codable, Equatable {
        /// The epoch it was shipped under.
        public var epoch: Int64
        public var eventCount: Int64
        /// RFC 3339, UTC.
        public var shippedAt: String

        public init(epoch: Int64, eventCount: Int64, shippedAt: String) {
            self.epoch = epoch
            self.eventCount = eventCount
            self.shippedAt = shippedAt
        }

        enum CodingKeys: String, CodingKey {
            case epoch
            case eventCount = "event_count"
            case shippedAt = "shipped_at"
        }
    }

    /// The version of this file's shape.
    public static let currentFormat = 1

    public var format: Int
    public var merchantID: String
    public var epoch: Int64
    public var nodeID: String
    public var restored: Restored?

    public init(merchantID: String, epoch: Int64, nodeID: String, restored: Restored? = nil) {
        self.format = Self.currentFormat
        self.merchantID = merchantID
        self.epoch = epoch
        self.nodeID = nodeID
        self.restored = restored
    }

    enum CodingKeys: String, CodingKey {
        case format, epoch, restored
        case merchantID = "merchant_id"
        case nodeID = "node_id"
    }

    /// The file's bytes (sorted keys, one line).
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self) + Data("\n".utf8)
    }

    /// Reads a file's bytes; nil when they are not an owner epoch of a format this build knows.
    public static func decode(_ data: Data) -> LedgerOwnerEpoch? {
        guard let record = try? JSONDecoder().decode(LedgerOwnerEpoch.self, from: data), record.format == currentFormat,
              record.epoch > 0 else { return nil }
        return record
    }

    /// The ledger's owner epoch; nil when it has none (or it cannot be read: treated as stale).
    public static func load(layout: LedgerLayout) -> LedgerOwnerEpoch? {
        guard let data = FileManager.default.contents(atPath: layout.ownerEpochFile.string) else { return nil }
        return decode(data)
    }

    /// Replaces the ledger's owner epoch atomically (the ledger directory is created when missing).
    public func save(layout: LedgerLayout) throws {
        try FileManager.default.createDirectory(atPath: layout.root.string, withIntermediateDirectories: true)
        try encoded().write(to: URL(fileURLWithPath: layout.ownerEpochFile.string), options: .atomic)
    }
}
