// The one scratch directory of the tests: every test file, ledger and database lives below the
// system temporary directory under a `catledger-test-` name, and the test removes it.

import Foundation

package enum Scratch {
    /// The parent of every scratch path: the system temporary directory.
    package static var parent: String { FileManager.default.temporaryDirectory.path }

    /// A path no file has yet: `<parent>/catledger-test-<label>-<uuid>`, under `parent` unless
    /// another is given. Nothing is created; remove what the test made there with `remove`.
    package static func path(_ label: String, in parent: String = Scratch.parent) -> String {
        (parent as NSString).appendingPathComponent("catledger-test-\(label)-\(UUID().uuidString)")
    }

    /// A new, empty directory at `path(label)`.
    package static func directory(_ label: String) throws -> String {
        let path = path(label)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Removes a scratch path and all below it; a missing path is fine.
    package static func remove(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// A parent on a memory file system when there is one with 1 GiB free (`/dev/shm`), for runs
    /// whose crashes are simulated and whose real fsyncs would only slow them down;
    /// `RELIABILITY_SCRATCH_DIRECTORY` overrides it, and without either it is `parent`.
    package static let memoryBackedParent: String = {
        if let chosen = ProcessInfo.processInfo.environment["RELIABILITY_SCRATCH_DIRECTORY"] { return chosen }
        var isDirectory: ObjCBool = false
        // Only when it has room: a container's /dev/shm may be as small as 64 MiB.
        var space = statvfs()
        if FileManager.default.fileExists(atPath: "/dev/shm", isDirectory: &isDirectory), isDirectory.boolValue,
           FileManager.default.isWritableFile(atPath: "/dev/shm"), statvfs("/dev/shm", &space) == 0,
           UInt64(space.f_bavail) * UInt64(space.f_frsize) >= 1 << 30 {
            return "/dev/shm"
        }
        return parent
    }()
}
