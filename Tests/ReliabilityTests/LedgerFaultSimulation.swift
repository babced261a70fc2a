// The fault simulation one layer up: the CatalogLedger event store (events, dedupe index,
// snapshots) over the fault-injecting file system. After every simulated crash it checks that
// every acknowledged event is still there and decodes to what was appended, that the dedupe index
// rebuilt on open knows every stored event (re-appending one is a duplicate at its sequence), and
// that the as-of query (snapshot plus replay) equals a plain fold of the events, now and at a past
// ledger time. Failures carry the seed, as in StorageFaultSimulation.

import CatalogLedger
import CatalogModel
import Foundation
import LedgerStorage
import LedgerStorageTesting
import SystemPackage

struct LedgerFaultSimulation {
    static let layout = LedgerLayout(root: "/sim-catalog")

    let seed: UInt64
    private var random: SeededGenerator
    private let disk = FaultInjectingFileSystem()
    private var options = LedgerOptions()
    /// The content of every acknowledged event, by sequence.
    private var acknowledged: [UInt64: PendingEvent] = [:]
    private var tally = SimulationTally()

    init(seed: UInt64) {
        self.seed = seed
        self.random = SeededGenerator(seed: seed)
    }

    private func fail(_ message: String) -> SimulationFailure { SimulationFailure(seed: seed, message: "ledger layer: " + message) }

    mutating func run() async throws -> SimulationTally {
        tally.seeds = 1
        options.storage.durability = .always
        options.storage.segmentBytesMax = Int.random(in: 2_000...8_000, using: &random)
        options.storage.segmentAgeMax = nil
        options.storage.clock = { 1_700_000_000_000_000_000 }
        options.snapshotEveryEvents = Int.random(in: 5...30, using: &random)

        var ledger = try open()
        var ledgerTimes: [Int64] = []
        for round in 0..<Int.random(in: 2...4, using: &random) {
            for tick in 0..<Int.random(in: 2...6, using: &random) {
                if Int.random(in: 0..<6, using: &random) == 0 { disk.failNextSyncs(1); tally.faultsArmed += 1 }
                let events = makeEvents(count: Int.random(in: 1...4, using: &random), label: "r\(round)t\(tick)")
                do {
                    let outcomes = try await ledger.append(events, recordedAt: 1_700_000_000_000_000_000 + Int64(round * 100 + tick))
                    for (event, outcome) in zip(events, outcomes) {
                        if case .appended(let sequence, let recordedAt) = outcome {
                            acknowledged[sequence] = event
                            ledgerTimes.append(recordedAt)
                        }
                    }
                    tally.appendsAcknowledged += 1
                } catch {
                    tally.appendsFailed += 1
                    break
                }
            }
            disk.crash(seed: random.next())
            try? await ledger.close()
            tally.crashesSurvived += 1
            ledger = try open()
            try await check(ledger, after: "crash \(round)", pastLedgerTime: ledgerTimes.randomElement(using: &random))
        }
        try await ledger.close()
        return tally
    }

    /// Observations of a few Square items; some repeat an earlier version (an idempotent duplicate).
    private mutating func makeEvents(count: Int, label: String) -> [PendingEvent] {
        var objects: [CatalogObject] = []
        for _ in 0..<count {
            let id = Int.random(in: 0..<6, using: &random)
            let version = Int64.random(in: 1...4, using: &random)
            let json = "{\"type\":\"ITEM\",\"id\":\"ITEM-\(id)\",\"version\":\(1_700_000_000_000 + version),"
                + "\"updated_at\":\"2026-11-0\(version)T10:00:00Z\",\"is_deleted\":false,"
                + "\"item_data\":{\"name\":\"Item \(id) v\(version)\"}}"
            objects.append(try! CatalogObject(bytes: Array(json.utf8)))
        }
        return EventBuilder.observations(of: objects, merchantID: MerchantID("MERCHANT-SIM"), source: .incrementalSync, correlationID: label)
    }

    private func open() throws -> Ledger {
        var lastError: Error?
        for _ in 0..<4 {
            do { return try Ledger.open(layout: Self.layout, options: options, fileSystem: disk, logger: StorageFaultSimulation.silentLogger) } catch {
                lastError = error
            }
        }
        throw fail("the ledger does not reopen: \(lastError.map { "\($0)" } ?? "?")")
    }

    private mutating func check(_ ledger: Ledger, after event: String, pastLedgerTime: Int64?) async throws {
        let events: [LedgerEvent]
        do { events = try ledger.reader.allEvents() } catch { throw fail("after \(event) events do not decode: \(error)") }
        for (position, stored) in events.enumerated() where stored.sequence != UInt64(position) {
            throw fail("after \(event) event \(position) has sequence \(stored.sequence)")
        }
        for (sequence, content) in acknowledged {
            guard sequence < UInt64(events.count), events[Int(sequence)].content == content else {
                throw fail("after \(event) acknowledged event \(sequence) is lost or altered")
            }
        }
        for stored in events { acknowledged[stored.sequence] = stored.content }

        // The dedupe index rebuilt on open must know every stored event.
        if let sample = events.randomElement(using: &random) {
            let outcome = try await ledger.append(sample.content)
            guard outcome == .duplicate(existingSequence: sample.sequence) else {
                throw fail("after \(event) re-appending event \(sample.sequence) gave \(outcome)")
            }
        }

        // As-of (snapshot + replay) equals the fold of the events, now and at a past ledger time.
        for filter in [AsOf.latest] + (pastLedgerTime.map { [AsOf(ledgerTimeMax: $0)] } ?? []) {
            let answered = try ledger.reader.state(asOf: filter).state
            let folded = CatalogState.fold(events, filter: filter)
            guard answered.objects == folded.objects else {
                throw fail("after \(event) state as of \(filter) differs from the fold of the events")
            }
        }
    }
}
