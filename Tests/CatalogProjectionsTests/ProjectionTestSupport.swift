import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import GRDB

/// A fresh directory holding a ledger and its projection files, removed by `cleanUp()`.
struct TemporaryLedger {
    let layout: LedgerLayout
    let root: String

    init() {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("catproj-test-\(UUID().uuidString)").path
        layout = LedgerLayout(root: root)
    }

    func path(_ name: String) -> String { (root as NSString).appendingPathComponent(name) }

    func cleanUp() { try? FileManager.default.removeItem(atPath: root) }

    /// Opens the writer without fsync (tests measure logic) and with a clock that advances one
    /// millisecond per append call, so ledger times are distinct and monotone.
    func open(clock: ManualClock = ManualClock(), segmentBytesMax: Int? = nil) throws -> Ledger {
        var options = LedgerOptions()
        options.storage.durability = .none
        options.storage.clock = { clock.tick() }
        if let segmentBytesMax { options.storage.segmentBytesMax = segmentBytesMax }
        options.snapshotEveryEvents = 0
        return try Ledger.open(layout: layout, options: options)
    }

    func projector(_ name: String = "projections.sqlite", options: ProjectorOptions = ProjectorOptions()) throws
        -> CatalogProjector {
        try CatalogProjector(databasePath: path(name), reader: LedgerReader(layout: layout), options: options)
    }
}

final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var now: Int64
    private let stepNanoseconds: Int64

    init(start: Int64 = 1_790_000_000_000_000_000, stepNanoseconds: Int64 = 1_000_000) {
        now = start
        self.stepNanoseconds = stepNanoseconds
    }

    func tick() -> Int64 {
        lock.withLock {
            now += stepNanoseconds
            return now
        }
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

/// Digests of every content table, by table name.
func digests(_ database: any DatabaseReader) throws -> [String: String] {
    try database.read { db in
        Dictionary(uniqueKeysWithValues: try ProjectionDigest.digests(db).map { ($0.table, $0.digest) })
    }
}

func digests(path: String) throws -> [String: String] {
    try digests(ProjectionQueries.open(path: path).database)
}

/// Thrown through `ProjectorOptions.beforeBatch` to abandon a catch-up between two batch
/// transactions, as a crash there would.
struct InjectedProjectionCrash: Error, CustomStringConvertible {
    var afterBatches: Int
    var description: String { "projection crash injected after \(afterBatches) batches" }
}

extension ProjectorOptions {
    /// Catch-up throws `InjectedProjectionCrash` before its next batch once the projector has
    /// committed `batches` batches.
    mutating func failAfterBatches(_ batches: Int) {
        beforeBatch = { committed in
            if committed >= batches { throw InjectedProjectionCrash(afterBatches: batches) }
        }
    }
}
