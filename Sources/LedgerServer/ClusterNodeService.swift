// Cluster mode (`serve --cluster-database`, docs/SCALING.md): the node's rounds (heartbeat, rebalance,
// lease renewals), the takeover of a merchant (its ledger restored from the segment archive when the
// local copy is not the archive's lineage, the new epoch recorded in the ledger directory), the
// shipping of each owned merchant's log to the archive (which marks the inbox deliveries it holds
// done), the poll for deliveries other nodes accepted, and the purge of the inbox's old done rows.

import CatalogLedger
import CatalogModel
import Crypto
import Foundation
import LedgerCluster
import LedgerStorage
import Logging
import ServiceLifecycle
import SquareWire

/// The cluster side of one node. The supervisor loop is a service of the server's group; the
/// operations are also called directly by tests.
final class ClusterNodeService: Service, @unchecked Sendable {
    let settings: ClusterServing
    let database: ClusterDatabase
    let node: ClusterNode
    let archive: SegmentArchive
    let inbox: ClusterDeliveryInbox
    let ownership: ClusterOwnership
    let directory: MerchantDirectory
    let dataRoot: String
    let metrics: ServerMetrics
    let logger: Logger
    /// Set once by `LedgerService.open`, before the loops run.
    var drain: InboxDrain?
    /// The writer of the shared read model (nil: `ClusterServing.readModel` is off). Set once by
    /// `LedgerService.open`, before the loops run.
    var readModel: ClusterReadModel?
    private let stateLock = NSLock()
    private var stopped = false
    /// Shipments and takeovers of one merchant never overlap.
    private var busy: Set<String> = []

    init(settings: ClusterServing, database: ClusterDatabase, directory: MerchantDirectory, ownership: ClusterOwnership,
         dataRoot: String, metrics: ServerMetrics, logger: Logger) throws {
        self.settings = settings
        self.database = database
        self.node = try ClusterNode(nodeID: settings.nodeID, address: settings.nodeAddress, leaseDuration: settings.leaseDuration,
                                    database: database)
        self.archive = SegmentArchive(database: database)
        self.ownership = ownership
        self.inbox = ClusterDeliveryInbox(inbox: ClusterInbox(database: database), ownership: ownership)
        self.directory = directory
        self.dataRoot = dataRoot
        self.metrics = metrics
        self.logger = logger
    }

    /// Connects to the cluster database (migrating it); a bad URL, an unreachable server or a newer
    /// schema is `LedgerServerError.cluster` saying so.
    static func connect(_ settings: ClusterServing, logger: Logger) async throws -> ClusterDatabase {
        guard !settings.nodeID.isEmpty, settings.nodeID.utf8.count <= 200 else {
            throw LedgerServerError.cluster("a node id must have 1 to 200 bytes")
        }
        do {
            return try await ClusterDatabase.connect(url: settings.databaseURL, logger: logger)
        } catch let error as ClusterError {
            throw LedgerServerError.cluster("\(error)")
        }
    }

    // MARK: The service

    func run() async throws {
        await cancelWhenGracefulShutdown { [self] in
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.every(self.settings.leaseDuration / 4) { await self.round() } }
                group.addTask { await self.every(self.settings.shipInterval) { await self.shipAll() } }
                group.addTask { await self.every(self.settings.inboxPollInterval) { await self.poll() } }
                group.addTask { await self.every(self.settings.inboxPurgeInterval) { await self.purgeInbox() } }
                if let readModel = self.readModel {
                    group.addTask { await self.every(self.settings.readModelInterval) { await readModel.writeAll() } }
                }
            }
        }
        await leave()
    }

    private func every(_ interval: Duration, _ body: () async -> Void) async {
        while !Task.isCancelled {
            await body()
            do { try await Task.sleep(for: interval) } catch { return }
        }
    }

    /// Stops draining, ships what was appended, releases every lease and leaves the cluster, so the
    /// other nodes take the merchants at their next round.
    func leave() async {
        stateLock.withLock { stopped = true }
        await drain?.stop()
        await shipAll()
        await readModel?.writeAllCaughtUp()
        for merchantID in ownership.heldMerchants { ownership.drop(merchantID) }
        do {
            try await node.leave()
            logger.notice("left the cluster", metadata: ["node": "\(settings.nodeID)"])
        } catch {
            logger.warning("could not leave the cluster; its leases expire instead", metadata: ["error": "\(error)"])
        }
    }

    // MARK: Rounds

    /// One round: heartbeat and rebalance (leases renewed, taken, released), then the takeovers and
    /// the losses it brought.
    func round() async {
        guard !stateLock.withLock({ stopped }) else { return }
        let sentAt = ContinuousClock.now
        let outcome: RebalanceOutcome
        let members: [ClusterMember]
        do {
            // A merchant that hashes elsewhere now is dropped here before its lease is released: an edit or
            // an append answered by this node after another took the lease would be lost at its takeover.
            // Each is dropped at once (no new use) and its ledger closed; the release waits for the closes at
            // most a quarter of a lease, so a long sync being closed does not hold up the other leases' renewals.
            outcome = try await node.rebalance(merchants: directory.merchantIDs.map(\.rawValue)) { [self] releasing in
                let closes = Task {
                    await withTaskGroup(of: Void.self) { group in
                        for merchantID in releasing {
                            group.addTask { await self.lose(merchantID, reason: "it hashes to another node: released in the rebalance") }
                        }
                    }
                }
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { await closes.value }
                    group.addTask { [settings] in try? await Task.sleep(for: settings.leaseDuration / 4) }
                    await group.next()
                    group.cancelAll()
                }
            }
            members = try await node.liveNodes()
        } catch {
            // The leases run out by themselves (the local validity stops the appends first).
            logger.warning("cluster round failed", metadata: ["error": "\(error)"])
            return
        }
        let addresses = Dictionary(members.map { ($0.nodeID, $0.address) }, uniquingKeysWith: { first, _ in first })
        var owners: [String: (nodeID: String, address: String)] = [:]
        for merchant in directory.merchantIDs.map(\.rawValue) {
            if let owner = Rendezvous.owner(of: merchant, among: outcome.liveNodes) {
                owners[merchant] = (owner, addresses[owner] ?? (owner == settings.nodeID ? settings.nodeAddress : "?"))
            }
        }
        ownership.setOwners(owners)
        let validUntil = sentAt + settings.leaseDuration - settings.localMargin
        var takeovers: [(String, Int64)] = []
        for (merchantID, lease) in outcome.held.sorted(by: { $0.key < $1.key })
        where ownership.hold(merchantID, epoch: lease.epoch, validUntil: validUntil) {
            takeovers.append((merchantID, lease.epoch))
        }
        for merchantID in ownership.heldMerchants where outcome.held[merchantID] == nil {
            await lose(merchantID, reason: "released in the rebalance or taken by another node")
        }
        // Beside the rounds, so many takeovers at once (a node starting alone, or a dead node's
        // merchants) never delay the renewals of the leases already held.
        for (merchantID, epoch) in takeovers {
            Task { [self] in
                do {
                    try await takeOver(merchantID, epoch: epoch)
                } catch {
                    logger.error("merchant could not be taken over; retried next round",
                                 metadata: ["merchant": "\(merchantID)", "epoch": "\(epoch)", "error": "\(error)"])
                    if ownership.epoch(of: merchantID) == epoch { ownership.drop(merchantID) }
                }
            }
        }
    }

    /// This node no longer writes for the merchant: its ledger is closed (a drain in progress fails
    /// and leaves the deliveries pending for the new owner).
    func lose(_ merchantID: String, reason: String) async {
        guard ownership.epoch(of: merchantID) != nil else { return }
        ownership.drop(merchantID)
        await directory.close(MerchantID(merchantID))
        logger.notice("merchant no longer written by this node", metadata: ["merchant": "\(merchantID)", "reason": "\(reason)"])
    }

    /// Makes the merchant's ledger current under a new epoch: restored from the archive's last
    /// shipment unless the local directory is that shipment's lineage (this node shipped it, under
    /// the epoch the directory records), the epoch recorded in the directory, shipped once (the
    /// archive records the new epoch); then its pending deliveries drained and, when the merchant
    /// has Square, an incremental sync from the ledger's watermark run at once (the catch-up).
    /// Logged, and in /metrics, with the recovery point.
    func takeOver(_ merchantID: String, epoch: Int64) async throws {
        let started = ContinuousClock.now
        let (restored, shippedAt) = try await restore(merchantID, epoch: epoch)
        let catchUp = await catchUp(merchantID, epoch: epoch)
        let took = ContinuousClock.now - started
        var metadata: Logger.Metadata = ["merchant": "\(merchantID)", "epoch": "\(epoch)", "took": "\(took)",
                                         "deliveries_drained": "\(catchUp.drained)", "sync": "\(catchUp.sync)"]
        var recoveryPointAge: Double?
        if let restored, let shippedAt {
            // The recovery point: what the previous owner appended after this shipment is not in the
            // ledger, except webhook deliveries, which stay pending in the inbox until shipped (drained
            // above), and what Square holds, which the catch-up sync fetched.
            recoveryPointAge = max(0, Date().timeIntervalSince(shippedAt))
            metadata["restored_from_epoch"] = "\(restored.epoch)"
            metadata["restored_events"] = "\(restored.eventCount)"
            metadata["recovery_point"] = "\(restored.shippedAt)"
        }
        metrics.takeover(merchant: merchantID, duration: took, recoveryPointAge: recoveryPointAge,
                         restoredEvents: restored?.eventCount, drained: catchUp.drained)
        logger.notice("merchant taken over", metadata: metadata)
    }

    /// The part of a takeover no shipment of the merchant may overlap: the restore (when the local
    /// directory is not the archive's lineage), the epoch recorded, the first shipment under it.
    /// Returns what was restored and when that shipment was made (nil: the local directory was kept).
    private func restore(_ merchantID: String, epoch: Int64) async throws -> (LedgerOwnerEpoch.Restored?, Date?) {
        // A takeover of an earlier epoch still running (the lease was lost and taken again meanwhile):
        // this one is retried at the next round.
        guard claim(merchantID) else { throw LedgerServerError.cluster("an earlier takeover of \(merchantID) is still running") }
        defer { unclaim(merchantID) }
        let id = MerchantID(merchantID)
        await directory.close(id)
        let layout = LedgerLayout(root: URL(fileURLWithPath: dataRoot).appendingPathComponent(merchantID).path)
        let local = LedgerOwnerEpoch.load(layout: layout)
        var restored: LedgerOwnerEpoch.Restored?
        var shippedAt: Date?
        var archived: [String: ClusterOwnership.ArchivedFile] = [:]
        if let latest = try await archive.latest(merchant: merchantID),
           !(local?.epoch == latest.epoch && local?.nodeID == settings.nodeID) {
            guard let shipment = try await archive.restore(merchant: merchantID) else {
                throw LedgerServerError.cluster("the archive's shipment of merchant \(merchantID) vanished during its restore")
            }
            try replaceLedger(layout, with: shipment)
            restored = LedgerOwnerEpoch.Restored(
                epoch: shipment.epoch, eventCount: shipment.eventCount,
                shippedAt: RFC3339.format(nanoseconds: Int64(shipment.shippedAt.timeIntervalSince1970 * 1e9)))
            shippedAt = shipment.shippedAt
            for file in shipment.files {
                // The hash state of a file that may grow (the active segment), so its next shipment is a range.
                var hasher: SHA256?
                if !file.sealed, let bytes = file.bytes {
                    hasher = SHA256()
                    hasher?.update(data: bytes)
                }
                archived[file.name] = .init(byteCount: Int(file.byteCount), sha256: file.sha256, hasher: hasher, rangeCount: file.rangeCount)
            }
        }
        try LedgerOwnerEpoch(merchantID: merchantID, epoch: epoch, nodeID: settings.nodeID, restored: restored).save(layout: layout)
        ownership.markReady(merchantID, epoch: epoch, archived: archived)
        try await ship(merchantID, force: true)
        return (restored, shippedAt)
    }

    /// After a restore: drains the deliveries pending in the inbox (waiting at most a lease for the
    /// drain to pass the newest one pending now), then, when the merchant has Square, runs an
    /// incremental sync from the ledger's stored watermark through its sync runner (the one a webhook
    /// or the reconciling sync triggers) and waits for it. Returns the deliveries appended under the
    /// epoch meanwhile and what became of the sync.
    private func catchUp(_ merchantID: String, epoch: Int64) async -> (drained: Int64, sync: String) {
        let newest: Int64
        do {
            newest = try await inbox.inbox.pendingNewest(among: [merchantID])[merchantID] ?? 0
        } catch {
            logger.warning("the inbox could not be read at a takeover; the poll drains it", metadata: ["merchant": "\(merchantID)", "error": "\(error)"])
            newest = 0
        }
        drain?.rescan([merchantID])
        let deadline = ContinuousClock.now + settings.leaseDuration
        // Until the drain has passed the newest delivery pending, and while the lease's validity by
        // this node's clock has lapsed (a slow round renews it late): at most a lease.
        while ownership.epoch(of: merchantID) == epoch, ownership.appendedThrough(merchantID) < newest || ownership.permit(merchantID) == nil,
              ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        let drained = ownership.appendedCount(merchantID)
        guard ownership.permit(merchantID)?.epoch == epoch else { return (drained, "skipped: the lease was lost") }
        do {
            let outcome = try await directory.use(MerchantID(merchantID), background: true) { merchant -> String in
                guard let runner = merchant.syncRunner else { return "none: no Square connection" }
                let before = merchant.health.lastSuccess
                await runner.trigger()
                await runner.waitUntilIdle()
                return merchant.health.lastSuccess != before ? "completed" : "failed: retried by webhooks and the reconciling sync"
            }
            return (drained, outcome ?? "none: the merchant is not served")
        } catch {
            return (drained, "skipped: \(error)")
        }
    }

    /// Replaces the merchant's ledger directory with the shipment's segments (the indexes, snapshots
    /// and projection are rebuilt from them when the ledger opens).
    private func replaceLedger(_ layout: LedgerLayout, with shipment: ArchiveShipment) throws {
        let fileManager = FileManager.default
        let root = layout.root.string
        let staging = URL(fileURLWithPath: dataRoot).appendingPathComponent(".restore-\(shipment.merchantID)").path
        if fileManager.fileExists(atPath: staging) { try fileManager.removeItem(atPath: staging) }
        try fileManager.createDirectory(atPath: staging, withIntermediateDirectories: true)
        try LogShipping.restore(shipment.files.map { ($0.name, $0.bytes ?? []) },
                                into: LedgerLayout(root: staging).logDirectory)
        if fileManager.fileExists(atPath: root) { try fileManager.removeItem(atPath: root) }
        try fileManager.moveItem(atPath: staging, toPath: root)
    }

    // MARK: Shipping

    /// Ships every merchant this node writes for whose log changed since its last shipment.
    func shipAll() async {
        for merchantID in ownership.readyMerchants {
            do {
                try await ship(merchantID, force: false)
            } catch {
                logger.warning("shipment to the segment archive failed; retried", metadata: ["merchant": "\(merchantID)", "error": "\(error)"])
            }
        }
    }

    /// Ships the merchant's log (its sealed segments not yet archived and the active segment's
    /// durable prefix) under its epoch, marking done the inbox deliveries appended before the files
    /// were read. Refused by PostgreSQL when the lease is no longer this node's: the merchant is lost.
    func ship(_ merchantID: String, force: Bool) async throws {
        guard force || claim(merchantID) else { return }
        defer { if !force { unclaim(merchantID) } }
        guard let state = ownership.shippingState(merchantID) else { return }
        let id = MerchantID(merchantID)
        // What the drain appended, captured before the files are read: the files hold it.
        let appendedThrough = state.appendedThrough
        let events: Int64
        if let open = directory.openMerchant(id) {
            events = Int64(open.ledger.nextSequence)
        } else if force || appendedThrough > state.shippedThrough {
            guard let counted = try await directory.use(id, background: true, { Int64($0.ledger.nextSequence) }) else { return }
            events = counted
        } else {
            return
        }
        guard force || events != state.shippedEvents || appendedThrough > state.shippedThrough else { return }
        let logDirectory = LedgerLayout(root: URL(fileURLWithPath: dataRoot).appendingPathComponent(merchantID).path).logDirectory
        var files: [ArchiveFile] = []
        var archived: [String: ClusterOwnership.ArchivedFile] = [:]
        for segment in try LogShipping.segments(logDirectory: logDirectory) {
            let known = state.archived[segment.name]
            if let known, known.byteCount == segment.byteCount {
                // As the archive holds it: nothing read, nothing sent.
                files.append(.unchanged(name: segment.name, sha256: known.sha256, byteCount: Int64(known.byteCount), sealed: segment.sealed))
                archived[segment.name] = known
            } else if let known, var hasher = known.hasher, !segment.sealed, segment.byteCount > known.byteCount,
                      known.rangeCount < ClusterOwnership.ArchivedFile.rangesMax {
                // The active segment, longer than the archive's copy (also active: it has a hash state):
                // only what follows it, as a range. (Sealing may rewrite the header, and compaction
                // replaces files: a sealed file is shipped whole, once.)
                let tail = try LogShipping.read(segment, from: known.byteCount, logDirectory: logDirectory)
                hasher.update(data: tail)
                let whole = Array(hasher.finalize())
                files.append(.appended(name: segment.name, prefixSHA256: known.sha256, start: Int64(known.byteCount), bytes: tail,
                                       sha256: whole, sealed: segment.sealed))
                archived[segment.name] = .init(byteCount: segment.byteCount, sha256: whole, hasher: hasher,
                                               rangeCount: max(known.rangeCount, 1) + 1)
            } else {
                let bytes = try LogShipping.read(segment, logDirectory: logDirectory)
                var hasher = SHA256()
                hasher.update(data: bytes)
                let whole = Array(hasher.finalize())
                files.append(ArchiveFile(name: segment.name, bytes: bytes, sha256: whole, sealed: segment.sealed))
                archived[segment.name] = .init(byteCount: bytes.count, sha256: whole, hasher: segment.sealed ? nil : hasher, rangeCount: 0)
            }
        }
        do {
            try await archive.ship(merchant: merchantID, epoch: state.epoch, nodeID: settings.nodeID, files: files,
                                   eventCount: events, inboxDoneThrough: appendedThrough)
        } catch let error as ClusterError where error.fenceRefusal != nil {
            await lose(merchantID, reason: "\(error)")
            throw error
        }
        metrics.shipped(bytes: files.reduce(0) { $0 + $1.sentByteCount })
        ownership.shipped(merchantID, epoch: state.epoch, through: appendedThrough, events: events, archived: archived)
    }

    /// A takeover or shipment of the merchant is running.
    func isBusy(_ merchantID: String) -> Bool { stateLock.withLock { busy.contains(merchantID) } }

    private func claim(_ merchantID: String) -> Bool { stateLock.withLock { busy.insert(merchantID).inserted } }
    private func unclaim(_ merchantID: String) { _ = stateLock.withLock { busy.remove(merchantID) } }

    // MARK: The inbox poll

    /// Hands the drain the merchants with deliveries accepted (by any node) and not yet appended here.
    func poll() async {
        guard let drain, !stateLock.withLock({ stopped }) else { return }
        do {
            let merchants = try await inbox.merchantsWithPending()
            if !merchants.isEmpty { drain.rescan(merchants) }
        } catch {
            logger.warning("the cluster inbox could not be read", metadata: ["error": "\(error)"])
        }
    }

    // MARK: The inbox purge

    /// Deletes the inbox's deliveries done longer than `inboxDoneRetention` ago, a bounded statement
    /// at a time until none is left due (docs/SCALING.md, "The webhook inbox"). Every node runs it; their
    /// statements skip the rows another holds. Returns how many rows this node deleted.
    @discardableResult
    func purgeInbox() async -> Int {
        var purged = 0
        while !stateLock.withLock({ stopped }) {
            do {
                let deleted = try await inbox.inbox.purgeDone(doneBefore: settings.inboxDoneRetention, limit: Self.purgeRowsMax)
                purged += deleted
                metrics.inboxPurged(deleted)
                if deleted < Self.purgeRowsMax { break }
            } catch {
                logger.warning("the cluster inbox's done deliveries could not be purged; retried next time", metadata: ["error": "\(error)"])
                break
            }
        }
        if purged > 0 {
            logger.info("purged the cluster inbox's done deliveries past their retention", metadata: ["rows": "\(purged)"])
        }
        return purged
    }

    /// The rows one purge statement deletes at most.
    static let purgeRowsMax = 1000
}
