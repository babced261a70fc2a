import CatalogIngest
import CatalogLedger
import CatalogModel
import Crypto
import Foundation
import Testing

/// The committed cafe recording, imported into a fresh ledger, answers what the simulator (Square's
/// side) knew: the catalog digest and tracked prices at each checkpoint, and the class of every
/// VERSION_MISMATCH incident.
struct CafeAnswersTests {
    struct Answers: Decodable {
        struct Incident: Decodable { var idempotencyKey: String; var expected: String }
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
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("cafe-\(UUID().uuidString)").path
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
        #expect(answers.incidents.count == 10, "two incidents of each of the five classes")
        for incident in answers.incidents {
            let rejection = try #require(events.first { event in
                if case .upsertRejected(let rejected) = event.body { return rejected.idempotencyKey == incident.idempotencyKey }
                return false
            })
            let diagnosis = try diagnoser.diagnose(rejectionSequence: rejection.sequence)
            #expect(diagnosis.primaryClassification.rawValue == incident.expected, "incident \(incident.idempotencyKey)")
        }
        try await ledger.close()
    }
}
