// A ledger in a scratch directory with a deterministic clock, and the projection crash injection,
// for the tests of the event store, the projections and the reliability simulations.

import CatalogLedger
import CatalogProjections
import Foundation

/// A fresh ledger directory (and room for projection files beside it) under `Scratch`, removed by
/// `cleanUp()`.
package struct TemporaryLedger {
    package let root: String
    package let layout: LedgerLayout

    package init(_ label: String = "ledger") {
        root = Scratch.path(label)
        layout = LedgerLayout(root: root)
    }

    /// A file beside the log in the ledger directory.
    package func path(_ name: String) -> String { (root as NSString).appendingPathComponent(name) }

    package func cleanUp() { Scratch.remove(root) }

    /// Opens the writer without fsync (tests measure logic, not the disk) and with a clock that
    /// advances one step per append call, so ledger times are distinct and monotone.
    package func open(snapshotEvery: Int = 0, clock: ManualClock = ManualClock(), segmentBytesMax: Int? = nil) throws -> Ledger {
        var options = LedgerOptions()
        options.storage.durability = .none
        options.storage.clock = { clock.tick() }
        if let segmentBytesMax { options.storage.segmentBytesMax = segmentBytesMax }
        options.snapshotEveryEvents = snapshotEvery
        return try Ledger.open(layout: layout, options: options)
    }
}

/// A ledger clock for tests: each reading is one step (a millisecond unless told) after the previous.
package final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var now: Int64
    private let stepNanoseconds: Int64

    package init(start: Int64 = 1_790_000_000_000_000_000, stepNanoseconds: Int64 = 1_000_000) {
        now = start
        self.stepNanoseconds = stepNanoseconds
    }

    package func tick() -> Int64 {
        lock.withLock {
            now += stepNanoseconds
            return now
        }
    }
}

/// Thrown through `ProjectorOptions.beforeBatch` to abandon a catch-up between two batch
/// transactions, as a crash there would.
package struct InjectedProjectionCrash: Error, CustomStringConvertible {
    package var afterBatches: Int
    package var description: String { "projection crash injected after \(afterBatches) batches" }
}

extension ProjectorOptions {
    /// Catch-up throws `InjectedProjectionCrash` before its next batch once the projector has
    /// committed `batches` batches.
    package mutating func failAfterBatches(_ batches: Int) {
        beforeBatch = { committed in
            if committed >= batches { throw InjectedProjectionCrash(afterBatches: batches) }
        }
    }
}
