import CatalogIngest
import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import LedgerQueries
import TestSupport
import Testing

/// The change log read from the projection's `change_log` (and the health page's counts from its
/// `event_counts`) give the same answer as the scan of every event (`LedgerQueries.changeLog(_:)`, `CatalogHistory.entityHistory`), for every filter and page:
/// on the bundled sample, caught up and rebuilt, and on random ledgers (the sample's facts and edits
/// appended in a shuffled order, in batches, so late old versions and twins arrive after newer ones).
@Suite(.serialized) struct ChangeLogProjectionTests {
    static let sample = PagesTests.sample

    static func filters(_ scan: [ChangeLogEntry], categories: [CatalogObjectID]) -> [ChangeLogFilter] {
        var filters = [ChangeLogFilter(), ChangeLogFilter(types: [.price]), ChangeLogFilter(types: [.name, .created, .deleted]),
                       ChangeLogFilter(sources: [.incrementalSync, .webhook]), ChangeLogFilter(types: [.availability], sources: [.fullSync])]
        if let item = scan.first(where: { $0.objectType == .item })?.objectID {
            filters.append(ChangeLogFilter(objectIDs: [item]))
            filters.append(ChangeLogFilter(objectIDs: [item], types: [.price]))
        }
        if let variation = scan.first(where: { $0.objectType == .itemVariation })?.objectID {
            filters.append(ChangeLogFilter(objectIDs: [variation, "NO_SUCH_OBJECT"]))
        }
        if let actor = scan.first(where: { $0.actor != nil })?.actor {
            filters.append(ChangeLogFilter(actor: String(actor.prefix(3)).uppercased()))
        }
        if let device = scan.first(where: { $0.device != nil })?.device { filters.append(ChangeLogFilter(device: device)) }
        if let category = categories.first { filters.append(ChangeLogFilter(category: category)) }
        if let location = scan.lazy.flatMap(\.changes).first(where: { $0.path.contains("location_id=") })?.path {
            let id = location.split(separator: "=")[1].prefix { $0 != "]" }
            filters.append(ChangeLogFilter(types: [.price], location: String(id)))
        }
        if scan.count > 4 {
            let times = scan.map(\.updatedAtNanos).sorted()
            filters.append(ChangeLogFilter(since: times[times.count / 4], until: times[times.count * 3 / 4]))
        }
        return filters
    }

    static func expectSameAnswers(_ queries: LedgerQueries, _ projection: ProjectionQueries, _ label: String) throws {
        // The health page's counts too (no compaction here: one would drop records the counts keep).
        let scanned = try queries.health()
        let counted = try queries.health(projection: projection)
        #expect(counted.stats == scanned.stats, "\(label): stats")
        #expect(counted.lastSync == scanned.lastSync && counted.syncRuns == scanned.syncRuns, "\(label): syncs")
        #expect(counted.webhooksByVerdict == scanned.webhooksByVerdict && counted.webhooksByType == scanned.webhooksByType,
                "\(label): webhooks")
        #expect(counted.compactions == scanned.compactions, "\(label): compactions")
        let all = try queries.changeLog()
        #expect(!all.isEmpty, "\(label): a change log to compare")
        let categories = try queries.changeLogCategories()
        #expect(try queries.changeLogCategories(projection: projection) == categories, "\(label): categories")
        for filter in filters(all, categories: categories) {
            let scan = try queries.changeLog(filter)
            let projected = try queries.changeLog(filter, projection: projection)
            #expect(projected.count == scan.count, "\(label): \(filter)")
            if let difference = zip(projected, scan).first(where: { $0 != $1 }) {
                Issue.record("\(label): \(filter)\nprojection: \(difference.0)\nscan:       \(difference.1)")
            }
            for (offset, limit) in [(0, 50), (3, 7), (scan.count, 5)] {
                let page = try queries.changeLogPage(filter, offset: offset, limit: limit, projection: projection)
                #expect(page.total == scan.count && page.entries == Array(scan.dropFirst(offset).prefix(limit)),
                        "\(label): page at \(offset) of \(filter)")
            }
        }
    }

    static func ledger(_ name: String) throws -> (Ledger, String) {
        let root = Scratch.path(name)
        var options = LedgerOptions()
        options.storage.durability = .none
        return (try Ledger.open(layout: LedgerLayout(root: root), options: options), root)
    }

    @Test("the sample: the projection's change log answers as the scan, caught up and rebuilt")
    func sampleLedger() async throws {
        let (ledger, root) = try Self.ledger("changelog-sample")
        _ = try await RecordingImporter(ledger: ledger).importFiles([Self.sample])
        let projector = try CatalogProjector(layout: LedgerLayout(root: root))
        try projector.catchUp()
        let queries = LedgerQueries(reader: ledger.reader)
        try Self.expectSameAnswers(queries, projector.queries, "sample, caught up")
        try projector.rebuild()
        try Self.expectSameAnswers(queries, projector.queries, "sample, rebuilt")
    }

    @Test("random ledgers: the sample's facts and edits in a shuffled order, followed in batches", arguments: [1, 2, 3, 4] as [UInt64])
    func randomLedgers(seed: UInt64) async throws {
        let (source, _) = try Self.ledger("changelog-source-\(seed)")
        _ = try await RecordingImporter(ledger: source).importFiles([Self.sample])
        var events = try source.reader.allEvents(from: 0).filter { event in
            switch event.body {
            case .objectObserved, .objectDeleted, .localEditProposed: true
            default: false
            }
        }
        var state = seed &* 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        // Mostly in order, with a share moved far back or forward (late old versions, early new ones).
        for index in events.indices where next() % 4 == 0 {
            events.swapAt(index, Int(next() % UInt64(events.count)))
        }
        let (ledger, root) = try Self.ledger("changelog-random-\(seed)")
        let projector = try CatalogProjector(layout: LedgerLayout(root: root))
        var start = 0
        while start < events.count {
            let end = min(events.count, start + 1 + Int(next() % 120))
            _ = try await ledger.append(events[start..<end].map(\.content))
            try projector.catchUp()
            start = end
        }
        let queries = LedgerQueries(reader: ledger.reader)
        try Self.expectSameAnswers(queries, projector.queries, "seed \(seed), followed")
        try projector.rebuild()
        try Self.expectSameAnswers(queries, projector.queries, "seed \(seed), rebuilt")
    }
}
