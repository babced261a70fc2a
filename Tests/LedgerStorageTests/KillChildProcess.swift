// `ledger-bench kill-child` for the crash tests: appends with policy `always` and prints each
// acknowledged sequence until it is killed.

import SystemPackage
import TestHelpers

extension ChildProcess {
    static func launchKillChild(directory: FilePath, seed: UInt64, extraArguments: [String] = []) throws -> ChildProcess {
        try launch(arguments: ["kill-child", "--dir", directory.string, "--seed", String(seed)] + extraArguments)
    }
}
