import CatalogIngest
import CatalogLedger
import CatalogModel
import Crypto
import Foundation
import SquareWire
import TestSupport
import Testing

/// The committed cafe recording, imported into a fresh ledger, answers what the simulator (Square's
/// side) knew: the catalog digest and tracked prices at each checkpoint, and the class of every
/// VERSION_MISMATCH incident.
struct CafeAnswersTests {
    struct Answers: Decodable {
        struct Incident: Decodable { var idempotencyKey: String; var expected: String; var call: String? }
        struct Price: Decodable { var variationID: String; var amount: Int64?; var harborAmount: Int64? }
        struct Checkpoint: Decodable {
            var at: String
            var liveObjects: Int
            var catalogDigest: String
            var prices: [Price]
        }
        var incidents: [Incident]
        var checkpoints: [Checkpoint]
    }

    static let sampleDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../data-samples/cafe").standardized.path

    static func importedLedger() async throws -> (Ledger, String) {
        let root = Scratch.path("cafe")
        var options = LedgerOptions()
        options.storage.durability = .none
        let ledger = try Ledger.open(layout: LedgerLayout(root: root), options: options)
        let report = try await RecordingImporter(ledger: ledger)
            .importFiles([sampleDirectory + "/cafe-history.jsonl"])
        #expect(report.eventsAppended > 500)
        #expect(report.duplicates > 0, "webhook-triggered syncs re-observe unchanged objects")
        return (ledger, root)
    }

    static func answers() throws -> Answers {
        let data = try Data(contentsOf: URL(fileURLWithPath: sampleDirectory + "/answers.json"))
        return try JSONDecoder().decode(Answers.self, from: data)
    }

    @Test("catalog digest and prices at every checkpoint equal the simulator's")
    func checkpoints() async throws {
        let (ledger, root) = try await Self.importedLedger()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let answers = try Self.answers()
        #expect(answers.checkpoints.count >= 5)
        for checkpoint in answers.checkpoints {
            let t = try #require(RFC3339.nanoseconds(checkpoint.at))
            let state = try ledger.reader.state(asOf: AsOf(squareTimeMax: t)).state
            let lines = state.liveObjects.map { "\($0.header.objectType.rawValue) \($0.header.objectID.rawValue) \($0.header.version)" }
                .sorted()
            let digest = SHA256.hash(data: Array(lines.joined(separator: "\n").utf8)).map { String(format: "%02x", $0) }.joined()
            #expect(lines.count == checkpoint.liveObjects, "live objects at \(checkpoint.at)")
            #expect(digest == checkpoint.catalogDigest, "catalog digest at \(checkpoint.at)")
            for price in checkpoint.prices {
                let object = state.object(CatalogObjectID(price.variationID))
                let live = state[CatalogObjectID(price.variationID)].map { !$0.header.isDeleted } ?? false
                #expect((live ? object?.priceMoney?.amount : nil) == price.amount, "\(price.variationID) at \(checkpoint.at)")
                let harbor = live ? object?.locationPriceOverrides[LocationID("LCAFEHARBOR02")]?.amount : nil
                #expect(harbor == price.harborAmount, "\(price.variationID) harbor price at \(checkpoint.at)")
            }
        }
        try await ledger.close()
    }

    @Test("every scripted VERSION_MISMATCH incident is diagnosed as its class")
    func incidents() async throws {
        let (ledger, root) = try await Self.importedLedger()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let answers = try Self.answers()
        let events = try ledger.reader.allEvents()
        let diagnoser = VersionMismatchDiagnoser(events: events)
        #expect(answers.incidents.count == 11, "two incidents of each of the five classes, and one after a photo attach")
        #expect(answers.incidents.contains { $0.call == "CreateCatalogImage" && $0.expected == "staleOwnEarlierWrite" })
        for incident in answers.incidents {
            let rejection = try #require(events.first { event in
                if case .upsertRejected(let rejected) = event.body { return rejected.idempotencyKey == incident.idempotencyKey }
                return false
            })
            let diagnosis = try diagnoser.diagnose(rejectionSequence: rejection.sequence)
            #expect(diagnosis.primaryClassification.rawValue == incident.expected, "incident \(incident.idempotencyKey)")
            if let call = incident.call {
                // Our own earlier write, named: the finding's explanation and its evidence.
                let own = diagnosis.findings.filter { $0.classification.rawValue == incident.expected }
                #expect(own.contains { $0.reason.kind == .ownEarlierCall && $0.reason.call == call }, "incident \(incident.idempotencyKey) names \(call)")
                #expect(own.contains { $0.movedBy.contains { $0.kind == "writeAccepted" && $0.note.contains(call) } })
            }
        }
        try await ledger.close()
    }
}

/// The two wrong answers found on the sample (issue "Time travel that never shows the future").
struct CafeTimeTravelTests {
    /// Espresso's Double was repriced on 2026-10-28, three weeks after the asked time; the item's own
    /// version did not move, and its later observations carry the new price. As of 2026-10-05 the
    /// item must show each variation at its own version in force then.
    @Test func espressoAsOfShowsNoNestedVersionFromTheFuture() async throws {
        let (ledger, root) = try await CafeAnswersTests.importedLedger()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let t = try #require(RFC3339.nanoseconds("2026-10-05T00:00:00Z"))
        let state = try ledger.reader.state(asOf: AsOf(squareTimeMax: t)).state
        let payload = try #require(state.materializedPayload(of: "IOA637UKLMJKBYECE5DDGC5L"))
        let espresso = try CatalogObject(bytes: payload)
        #expect(espresso.name == "Espresso")
        #expect(espresso.nested.count == 2)
        for variation in espresso.nested {
            #expect((variation.updatedAtNanos ?? .max) <= t, "\(variation.id) v\(variation.version ?? 0) is later than T")
            #expect(variation.version == state[variation.id]?.header.version)
        }
        let double = try #require(espresso.nested.first { $0.name == "Double" })
        #expect(double.priceMoney == Money(amount: 375, currency: "USD"))
        // Today the Double costs 3.85, and the item as of now says so.
        let now = try ledger.reader.state(asOf: .latest).state
        let today = try CatalogObject(bytes: try #require(now.materializedPayload(of: "IOA637UKLMJKBYECE5DDGC5L")))
        #expect(today.nested.first { $0.name == "Double" }?.priceMoney == Money(amount: 385, currency: "USD"))
        try await ledger.close()
    }

    /// Danish (42YU3B4CSW3B45OQYIYGAVG5) was renamed at sequence 412; sequence 448 re-observed the same
    /// item version with other variation prices. History must credit the rename to 412, list versions
    /// in (version, sequence) order, and show no item change that is a variation's.
    @Test func danishHistoryCreditsTheRenameToTheEventThatBroughtIt() async throws {
        let (ledger, root) = try await CafeAnswersTests.importedLedger()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let history = CatalogHistory(events: try ledger.reader.allEvents())
        let versions = history.entityHistory(of: "42YU3B4CSW3B45OQYIYGAVG5")
        let order = versions.map { "\($0.version)/\(String(format: "%012llu", $0.firstSequence))" }
        #expect(order == order.sorted())
        let rename = try #require(versions.first { $0.changes.contains { $0.path == "item_data.name" } })
        #expect(rename.firstSequence == 412)
        #expect(!versions.contains { $0.changes.contains { $0.path.contains("variations") } })
        // The variation's price changes are in its own history, credited to the events that brought them.
        let children = history.childHistories(of: "42YU3B4CSW3B45OQYIYGAVG5")
        let prices = children.flatMap { child in child.versions.flatMap { v in v.changes.filter { $0.path.hasSuffix("price_money") }.map { (v.firstSequence, $0.shownBefore, $0.shownAfter) } } }
        #expect(prices.map(\.0) == prices.map(\.0).sorted())
        #expect(prices.contains { $0.1 == "$9.99" && $0.2 == "$10.09" })
        #expect(!prices.contains { $0.1 == "$10.09" && $0.2 == "$9.99" }, "a price change that never happened")
        // verify's count: every twin of the sample differs only in nested children.
        let twins = history.twinCounts()
        #expect(twins.pairs > 0 && twins.pairs == twins.nestedOnly)
        #expect(history.sameVersionTwins().isEmpty)
        try await ledger.close()
    }
}
