// The one seeded generator of the tests is LedgerStorageTesting's `SeededGenerator` (the tools use
// it too); this is where a test gets its seed.

import Foundation
import LedgerStorageTesting

extension SeededGenerator {
    /// `CATLEDGER_TEST_SEED` when set, else `default` when given, else a random seed. The test
    /// prints it, so a failing run can be repeated exactly.
    package static func seed(default value: UInt64? = nil) -> UInt64 {
        if let text = ProcessInfo.processInfo.environment["CATLEDGER_TEST_SEED"], let seed = UInt64(text) { return seed }
        return value ?? UInt64.random(in: 1...UInt64.max)
    }
}
