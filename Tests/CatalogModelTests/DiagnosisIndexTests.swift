import LedgerStorageTesting
import Testing
@testable import CatalogModel

/// `DiagnosisIndex` feeds the one diagnoser only the events of the objects a rejected request
/// names. On generated histories with many rejections (stale, own earlier writes, deletions,
/// missing versions, batches, temporary ids, reused keys, rejections without an edit, follow-up
/// reads or none), every incident's diagnosis must equal the diagnosis over the full history, in
/// both windows: the whole log (`catledger conflicts`, the server) and the log through the
/// rejection (the projection, built incrementally as a fold meets it).
@Suite("Diagnosis index: the old full-history diagnosis, fed a smaller history")
struct DiagnosisIndexTests {
    /// Square's side of a generated history: the true objects, which the ledger learns only
    /// through reads, accepted writes and follow-ups.
    struct Truth {
        var versions: [String: Int64] = [:]
        var prices: [String: Int64] = [:]
        var deleted: Set<String> = []
        var clock: Int64 = HistoryScript.t0 / 1_000_000 - 3_600_000

        mutating func bump(_ id: String) -> Int64 {
            clock += 1_000
            versions[id] = clock
            return clock
        }

        func variation(_ id: String, version: Int64?? = .none, price: Int64? = nil) -> String {
            SquareJSON.variation(id, item: String(id.prefix(2)), version: version ?? versions[id],
                                 price: price ?? prices[id], deleted: deleted.contains(id))
        }

        func item(_ id: String, version: Int64?? = .none, variations: [String]) -> String {
            SquareJSON.item(id, version: version ?? versions[id], name: "Item \(id)", variations: variations,
                            deleted: deleted.contains(id))
        }
    }

    static let items = ["I0", "I1", "I2"]
    static func variations(of item: String) -> [String] { ["\(item)a", "\(item)b"] }

    /// A random history of `steps` steps from `seed`.
    static func history(seed: UInt64, steps: Int) throws -> HistoryScript {
        var rng = SeededGenerator(seed: seed)
        var s = HistoryScript()
        var truth = Truth()
        var keys: [String] = []
        for item in items {
            _ = truth.bump(item)
            for v in variations(of: item) {
                _ = truth.bump(v)
                truth.prices[v] = Int64.random(in: 300...600, using: &rng)
            }
        }
        func fullRead(_ item: String) -> String {
            truth.item(item, variations: variations(of: item).map { truth.variation($0) })
        }
        try s.read(SquareJSON.search(items.map(fullRead)), source: .fullSync, correlation: "full-0")
        /// A version to send for `id`: mostly the true one, else stale, missing or from the future.
        func sentVersion(_ id: String) -> Int64? {
            let truthVersion = truth.versions[id]!
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<4: return truthVersion
            case 4..<7: return truthVersion - 1_000 * Int64.random(in: 1...3, using: &rng)
            case 7: return nil
            case 8: return truthVersion + 5_000
            default: return truthVersion
            }
        }
        for step in 0..<steps {
            let item = items.randomElement(using: &rng)!
            let variation = variations(of: item).randomElement(using: &rng)!
            switch Int.random(in: 0..<10, using: &rng) {
            case 0, 1:
                // Another writer moves a variation on; the ledger may learn it at once, later or never.
                _ = truth.bump(variation)
                truth.prices[variation]! += 25
                if Bool.random(using: &rng) {
                    try s.read(SquareJSON.search([truth.variation(variation)]), source: .incrementalSync, correlation: "inc-\(step)")
                }
            case 2:
                // A sync of one item (its variations nested), sometimes a second time (duplicates).
                let body = SquareJSON.search([fullRead(item)])
                try s.read(body, source: .incrementalSync, correlation: "inc-\(step)")
                if Int.random(in: 0..<3, using: &rng) == 0 { try s.read(body, source: .fullSync, correlation: "full-\(step)") }
            case 3 where Int.random(in: 0..<4, using: &rng) == 0:
                // A deletion, learned from a read.
                _ = truth.bump(variation)
                truth.deleted.insert(variation)
                try s.read(SquareJSON.search([truth.variation(variation)]), source: .incrementalSync, correlation: "del-\(step)")
            default:
                // An edit and its outcome.
                let reuse = !keys.isEmpty && Int.random(in: 0..<12, using: &rng) == 0
                let key = reuse ? keys.randomElement(using: &rng)! : "k\(seed)-\(step)"
                keys.append(key)
                let kind = Int.random(in: 0..<4, using: &rng)
                var request: String
                var named: [String]
                if kind == 0 {
                    // The whole item with its variations (nested versions sometimes missing).
                    named = [item] + variations(of: item)
                    let nested = variations(of: item).map { truth.variation($0, version: .some(sentVersion($0)), price: 700) }
                    request = SquareJSON.upsertRequest(key: key, truth.item(item, version: .some(sentVersion(item)), variations: nested))
                } else if kind == 1 {
                    // A batch: two variations, one of another item, and a new object with a temporary id.
                    let other = variations(of: items.randomElement(using: &rng)!).randomElement(using: &rng)!
                    named = [variation, other]
                    request = SquareJSON.batchUpsertRequest(key: key, [
                        truth.variation(variation, version: .some(sentVersion(variation)), price: 650),
                        truth.variation(other, version: .some(sentVersion(other)), price: 660),
                        SquareJSON.variation("#new-\(step)", item: item, version: nil, price: 100),
                    ])
                } else {
                    named = [variation]
                    request = SquareJSON.upsertRequest(key: key, truth.variation(variation, version: .some(sentVersion(variation)), price: 700))
                }
                let recordEdit = Int.random(in: 0..<10, using: &rng) != 0
                if recordEdit {
                    let base = named.compactMap { id in truth.versions[id].map { ObjectVersion(objectID: CatalogObjectID(rawValue: id), version: $0) } }
                    try s.edit(key: key, request: request, base: Bool.random(using: &rng) ? base : [],
                               targets: named.map { CatalogObjectID(rawValue: $0) })
                }
                let accept = kind >= 2 && recordEdit && !truth.deleted.contains(variation)
                    && Int.random(in: 0..<3, using: &rng) == 0
                if accept {
                    _ = truth.bump(variation)
                    truth.prices[variation] = 700
                    try s.accepted(key: key, response: SquareJSON.upsertResponse(truth.variation(variation)))
                } else {
                    let followUp = Bool.random(using: &rng)
                        ? SquareJSON.search(named.map { $0.count == 2 ? fullRead($0) : truth.variation($0) }) : nil
                    try s.rejected(key: key, followUp: followUp)
                }
            }
        }
        return s
    }

    @Test("every incident: the index path equals the full-history diagnosis, in both windows", arguments: 0..<12)
    func sameAsFullHistory(seed: UInt64) throws {
        let s = try Self.history(seed: 20_261_124 + seed, steps: 160)
        let whole = VersionMismatchDiagnoser(events: s.events)
        let wholeIndex = DiagnosisIndex(events: s.events)
        var incremental = DiagnosisIndex()
        // A rebuild's index: only the objects some edit of the log names.
        var restricted = DiagnosisIndex(restrictedTo: DiagnosisIndex.objectsNamed(byEditsIn: s.events))
        var classes = Set<VersionMismatchDiagnosis.Classification>()
        var incidents = 0
        for event in s.events {
            incremental.add(event)
            restricted.add(event)
            guard case .upsertRejected = event.body else { continue }
            incidents += 1
            // The whole log: `catledger conflicts` and the server's conflict routes.
            let expected = try whole.diagnose(rejectionSequence: event.sequence)
            let indexed = try wholeIndex.diagnose(event)
            #expect(indexed == expected, "seed \(seed), incident \(event.sequence): whole-log window")
            // Through the rejection: the projection, its rebuild and replay.
            let prefix = s.events.prefix { $0.sequence <= event.sequence }
            let expectedThen = try VersionMismatchDiagnoser(events: prefix).diagnose(rejectionSequence: event.sequence)
            #expect(try incremental.diagnose(event) == expectedThen, "seed \(seed), incident \(event.sequence): window through it")
            #expect(try restricted.diagnose(event) == expectedThen, "seed \(seed), incident \(event.sequence): restricted to edited objects")
            #expect(wholeIndex.events(readBy: event).count < s.events.count)
            expected.findings.forEach { classes.insert($0.classification) }
            classes.formUnion(expected.classifications)
        }
        #expect(wholeIndex.rejections.count == incidents)
        #expect(incidents >= 40, "the generated history holds many rejections")
        #expect(classes.count >= 6, "the generated incidents cover most classes: \(classes)")
    }

    @Test("lookup by sequence or idempotency key finds the first matching rejection")
    func lookup() throws {
        let s = try Self.history(seed: 7, steps: 60)
        let index = DiagnosisIndex(events: s.events)
        let first = try #require(index.rejections.first)
        guard case .upsertRejected(let rejected) = first.body else { Issue.record("not a rejection"); return }
        #expect(index.rejection(named: "\(first.sequence)")?.sequence == first.sequence)
        #expect(index.rejection(named: rejected.idempotencyKey)?.sequence == first.sequence)
        #expect(index.rejection(named: "no-such-key") == nil)
    }
}
