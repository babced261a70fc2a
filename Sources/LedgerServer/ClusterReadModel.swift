// Cluster mode: the owner's writer of the shared read model (docs/SCALING.md, "The shared read
// model"). Every round, each merchant this node writes for has the rows its projection changed
// since the read model's checkpoint written to PostgreSQL, with the new checkpoint, in one
// transaction fenced by the lease epoch; a read model the ledger does not continue (another lineage,
// a shorter log after a takeover) or has never seen is rebuilt from the whole projection and swapped.

import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import GRDB
import LedgerCluster
import Logging

/// Writes the shared read model of the merchants this node owns. Thread-safety: `lock` guards
/// what it knows of each merchant's read model.
final class ClusterReadModel: @unchecked Sendable {
    /// What one write did.
    enum Outcome: Equatable {
        /// Nothing to write: the projection holds nothing past the read model (or nothing at all).
        case current
        case applied(through: Int64, rows: Int)
        case rebuilt(through: Int64, rows: Int)
    }

    let model: SharedReadModel
    let directory: MerchantDirectory
    let ownership: ClusterOwnership
    let nodeID: String
    let logger: Logger
    private let lock = NSLock()
    /// The read model's checkpoint as this node last wrote it, under the epoch it holds.
    private var known: [String: (epoch: Int64, checkpoint: ReadModelCheckpoint?)] = [:]
    private var writing: Set<String> = []

    init(model: SharedReadModel, directory: MerchantDirectory, ownership: ClusterOwnership, nodeID: String, logger: Logger) {
        self.model = model
        self.directory = directory
        self.ownership = ownership
        self.nodeID = nodeID
        self.logger = logger
    }

    /// Writes every merchant this node may write for now (see `write(_:)`).
    func writeAll(stopping: Bool = false) async {
        for merchantID in ownership.readyMerchants {
            do {
                _ = try await write(merchantID, stopping: stopping)
            } catch let error as ClusterError where error.fenceRefusal != nil {
                forget(merchantID)  // the lease is gone: the shipper notices it too and stops writing for the merchant
            } catch {
                forget(merchantID)
                logger.warning("the shared read model could not be written; retried", metadata: ["merchant": "\(merchantID)", "error": "\(error)"])
            }
        }
    }

    /// When the node stops (its drain stopped, its ledgers shipped): waits, up to `timeout` each, for
    /// every open merchant's projection to hold its whole ledger, then writes them all, so the read
    /// model the next owner finds is the ledger's.
    func writeAllCaughtUp(timeout: Duration = .seconds(2)) async {
        for merchantID in ownership.readyMerchants {
            guard let open = directory.openMerchant(MerchantID(merchantID)), let follower = open.projection,
                  open.ledger.nextSequence > 0 else { continue }
            _ = await follower.waitUntilApplied(through: open.ledger.nextSequence - 1, timeout: timeout)
        }
        await writeAll(stopping: true)
    }

    /// Brings the merchant's read model up to its projection, if this node writes for it. A merchant
    /// whose ledger is closed is opened (in the background, closed again when idle) only when the
    /// read model may be behind it: not written under this epoch yet (a takeover, a restart), or
    /// behind what the last shipment held; its projection is let catch up first (up to `catchUp`).
    /// `stopping`: the node is leaving; its rounds no longer renew the leases, so the write goes under
    /// the epoch held, whatever this node's clock says of it (PostgreSQL's fence decides, as for the
    /// last shipment).
    func write(_ merchantID: String, catchUp: Duration = .seconds(5), stopping: Bool = false) async throws -> Outcome {
        let epoch = stopping ? ownership.shippingState(merchantID)?.epoch : ownership.permit(merchantID)?.epoch
        guard let epoch, lock.withLock({ writing.insert(merchantID).inserted }) else { return .current }
        defer { _ = lock.withLock { writing.remove(merchantID) } }
        let id = MerchantID(merchantID)
        let cached = lock.withLock { known[merchantID].flatMap { $0.epoch == epoch ? $0.checkpoint : nil } }
        let result: (Outcome, ReadModelCheckpoint?)?
        if let open = directory.openMerchant(id) {
            guard let projector = open.projector else { return .current }
            result = try await Self.write(merchantID, epoch: epoch, nodeID: nodeID, projector: projector, model: model,
                                          written: cached, logger: logger)
        } else {
            let events = ownership.shippingState(merchantID)?.shippedEvents ?? 0
            if events <= 0 || (cached.map { $0.sequence + 1 >= events } ?? false) { return .current }
            result = try await directory.use(id, background: true) { [self] merchant -> (Outcome, ReadModelCheckpoint?)? in
                guard let follower = merchant.projection else { return nil }
                if merchant.ledger.nextSequence > 0 {
                    _ = await follower.waitUntilApplied(through: merchant.ledger.nextSequence - 1, timeout: catchUp)
                }
                return try await Self.write(merchantID, epoch: epoch, nodeID: nodeID, projector: follower.projector, model: model,
                                            written: cached, logger: logger)
            } ?? nil
        }
        guard let (outcome, checkpoint) = result else { return .current }
        lock.withLock { known[merchantID] = (epoch, checkpoint) }
        return outcome
    }

    /// Writes the rows `projector` changed since the read model's checkpoint, with its checkpoint,
    /// under `epoch`: a change when the checkpoint is one this ledger continues (`written`: the one
    /// this writer wrote last under the epoch; nil: read from the database and checked against the
    /// ledger's event at it), else a rebuild from every row. Returns the checkpoint written (or found).
    static func write(_ merchantID: String, epoch: Int64, nodeID: String, projector: CatalogProjector, model: SharedReadModel,
                      written: ReadModelCheckpoint?, logger: Logger) async throws -> (Outcome, ReadModelCheckpoint?) {
        var after = written
        if after == nil, let state = try await model.state(merchant: merchantID) {
            // Written by another owner (or before this node restarted): continued only when this
            // ledger holds the event it was taken at.
            let checkpoint = LogCheckpoint(state.checkpoint)
            let agreement = try await onLane(merchantID) { try LogCheckpoint.agreement(of: checkpoint, with: projector.reader) }
            if agreement.requiresRebuild {
                logger.notice("the shared read model does not continue this ledger; rebuilding it",
                              metadata: ["merchant": "\(merchantID)", "agreement": "\(agreement)"])
            } else {
                after = state.checkpoint
            }
        }
        let from = after
        // Read and converted on the lane: a rebuild's rows are the whole projection.
        let export = try await onLane(merchantID) { () -> (ProjectionExport, [ReadModelRows])? in
            try projector.export(after: from.map { UInt64($0.sequence) }).map { ($0, $0.tables.map(Self.rows)) }
        }
        guard let (export, tables) = export else { return (.current, from) }
        let checkpoint = ReadModelCheckpoint(export.checkpoint)
        let rows = tables.reduce(0) { $0 + $1.rows.count }
        if export.isComplete {
            try await model.rebuild(merchant: merchantID, epoch: epoch, nodeID: nodeID, checkpoint: checkpoint, tables: tables)
            return (.rebuilt(through: checkpoint.sequence, rows: rows), checkpoint)
        }
        try await model.apply(merchant: merchantID, epoch: epoch, nodeID: nodeID, expected: from, checkpoint: checkpoint, changes: tables)
        return (.applied(through: checkpoint.sequence, rows: rows), checkpoint)
    }

    /// Forgets what this node knew of the merchant's read model (the next write reads it again).
    func forget(_ merchantID: String) { _ = lock.withLock { known.removeValue(forKey: merchantID) } }

    /// Runs the projection's reads on the merchant's background lane (off the cooperative pool).
    private static func onLane<T: Sendable>(_ merchantID: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withTaskExecutorPreference(MerchantDirectory.backgroundLane(of: merchantID)) { try body() }
    }

    /// The projection's table as the read model names it, its values in the read model's terms.
    static func rows(_ table: ProjectionExport.Table) -> ReadModelRows {
        ReadModelRows(table: table.name == "version_conflicts" ? "conflicts" : table.name, columns: table.columns,
                      keyColumn: table.keyColumn, replacedKeys: table.replacedKeys,
                      rows: table.rows.map { $0.map(value) })
    }

    static func value(_ value: DatabaseValue) -> ReadModelValue {
        switch value.storage {
        case .null: .null
        case .int64(let number): .integer(number)
        case .double(let number): .real(number)
        case .string(let text): .text(text)
        case .blob(let data): .bytes(Array(data))
        }
    }
}

extension ReadModelCheckpoint {
    init(_ checkpoint: LogCheckpoint) {
        self.init(sequence: Int64(checkpoint.sequence), anchorRecordedAt: checkpoint.anchor?.recordedAt,
                  anchorKey: checkpoint.anchor?.keyDigest)
    }
}

extension LogCheckpoint {
    init(_ checkpoint: ReadModelCheckpoint) {
        let anchor = checkpoint.anchorRecordedAt.flatMap { recordedAt in
            checkpoint.anchorKey.map { Anchor(recordedAt: recordedAt, keyDigest: $0) }
        }
        self.init(sequence: UInt64(checkpoint.sequence), anchor: anchor)
    }
}
