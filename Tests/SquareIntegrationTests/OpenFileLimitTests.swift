#if canImport(Glibc)
import Glibc
#endif
@testable import LedgerServer
import Logging
import Testing

/// A thousand open merchants hold about 15,000 files: the server raises its soft limit on open
/// files to the hard limit when it starts.
struct OpenFileLimitTests {
    @Test func theServerRaisesItsSoftOpenFileLimitToTheHardLimit() throws {
        #if canImport(Glibc)
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        var limit = rlimit()
        #expect(getrlimit(resource, &limit) == 0)
        try #require(limit.rlim_max > 64, "a hard limit this test can lower the soft one under")
        // Lowered by one only, so that the other tests running meanwhile never run short.
        var lowered = limit
        lowered.rlim_cur = limit.rlim_max - 1
        #expect(setrlimit(resource, &lowered) == 0)
        let raised = OpenFileLimit.raise(logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        var after = rlimit()
        #expect(getrlimit(resource, &after) == 0)
        #expect(after.rlim_cur == limit.rlim_max)
        #expect(raised == UInt64(limit.rlim_max))
        #endif
    }
}
