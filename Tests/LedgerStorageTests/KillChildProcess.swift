// `ledger-bench kill-child` for the crash tests: appends with policy `always` and prints each
// acknowledged sequence until it is killed.

import SystemPackage
import TestSupport

extension ChildProcess {
    static func launchKillChild(directory: FilePath, seed: UInt64, extraArguments: [String] = []) throws -> ChildProcess {
        try launch("ledger-bench", ["kill-child", "--dir", directory.string, "--seed", String(seed)] + extraArguments)
    }
}
