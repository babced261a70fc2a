import CatalogLedger
import CatalogModel
import Foundation
import LedgerStorage
import SquareWire
import SystemPackage

/// A fresh ledger directory under the temporary directory, removed by `cleanUp()`.
struct TemporaryLedger {
    let layout: LedgerLayout

    init() {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("catledger-test-\(UUID().uuidString)").path
        layout = LedgerLayout(root: path)
    }

    func cleanUp() { try? FileManager.default.removeItem(atPath: layout.root.string) }

    /// Opens the writer with policy `none` (tests measure logic, not fsync) and a deterministic clock
    /// that advances one millisecond per record batch.
    func open(snapshotEvery: Int = 0, clock: ManualClock = ManualClock()) throws -> Ledger {
        var options = LedgerOptions()
        options.storage.durability = .none
        options.storage.clock = { clock.tick() }
        options.snapshotEveryEvents = snapshotEvery
        return try Ledger.open(layout: layout, options: options)
    }
}

/// A ledger clock for tests: each reading is one millisecond after the previous.
final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var now: Int64

    init(start: Int64 = 1_790_000_000_000_000_000) { now = start }

    func tick() -> Int64 {
        lock.withLock {
            now += 1_000_000
            return now
        }
    }
}

/// Square-shaped JSON for generated histories.
enum SampleObjects {
    static func updatedAt(version: Int64) -> String { RFC3339.format(nanoseconds: version * 1_000_000) }

    static func variation(_ id: String, item: String, version: Int64, price: Int64) -> String {
        #"{"type":"ITEM_VARIATION","id":"\#(id)","updated_at":"\#(updatedAt(version: version))","version":\#(version),"is_deleted":false,"present_at_all_locations":true,"item_variation_data":{"item_id":"\#(item)","name":"Regular","pricing_type":"FIXED_PRICING","price_money":{"amount":\#(price),"currency":"USD"}}}"#
    }

    static func item(_ id: String, version: Int64, name: String, variations: [String], deleted: Bool = false) -> String {
        #"{"type":"ITEM","id":"\#(id)","updated_at":"\#(updatedAt(version: version))","version":\#(version),"is_deleted":\#(deleted),"present_at_all_locations":true,"item_data":{"name":"\#(name)","variations":[\#(variations.joined(separator: ","))]}}"#
    }

    /// Observation events (item plus its one variation) for a search response holding one item.
    static func observe(item id: String, version: Int64, price: Int64, name: String? = nil,
                        deleted: Bool = false, source: EventSource = .incrementalSync) throws -> [PendingEvent] {
        let variation = variation("\(id)-V", item: id, version: version, price: price)
        let body = #"{"objects":[\#(item(id, version: version, name: name ?? "Item \(id)", variations: [variation], deleted: deleted))]}"#
        return try EventBuilder.eventsFromReadResponse(body: Array(body.utf8), merchantID: "M1", source: source,
                                                       correlationID: "run-\(version)")
    }
}

/// A seeded generator whose seed is printed, so a failing run can be repeated exactly.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    static func seed() -> UInt64 {
        if let text = ProcessInfo.processInfo.environment["CATLEDGER_TEST_SEED"], let seed = UInt64(text) { return seed }
        return UInt64.random(in: 1...UInt64.max)
    }
}
