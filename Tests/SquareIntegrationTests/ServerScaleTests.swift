#if canImport(Glibc)
import Glibc
#endif
import CatalogLedger
import CatalogModel
import Foundation
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

/// `/healthz` needs no token and is asked every few seconds: it must not read every merchant's
/// verification record on each request (ten thousand reads with ten thousand merchants).
struct VerificationStatusTests {
    final class Reads: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        var value: Int { lock.withLock { count } }
        func add() { lock.withLock { count += 1 } }
    }

    /// A clock the test moves by hand: the answer's age never depends on how busy the machine is.
    final class ManualClock: @unchecked Sendable {
        private let lock = NSLock()
        private var instant = ContinuousClock.now
        var now: ContinuousClock.Instant { lock.withLock { instant } }
        func advance(by duration: Duration) { lock.withLock { instant += duration } }
    }

    @Test func theRecordsAreReadAgainOnlyAfterAVerificationHereOrOnceTheAnswerIsOld() async throws {
        let reads = Reads()
        let clock = ManualClock()
        let failing = [(merchantID: MerchantID("MLFAILED"), record: VerificationRecord(
            scope: .full, problems: ["damaged"]))]
        let status = VerificationStatus(maximumAge: .milliseconds(300), clock: { clock.now }) {
            reads.add()
            return reads.value >= 3 ? failing : []
        }
        for _ in 0..<100 { #expect(status.current.isEmpty) }
        #expect(reads.value == 1)
        status.recorded()
        _ = status.current
        _ = status.current
        #expect(reads.value == 2, "a verification recorded here is seen at once")
        clock.advance(by: .milliseconds(299))
        for _ in 0..<100 { #expect(status.current.isEmpty) }
        #expect(reads.value == 2, "not read again while the answer is younger than its maximum age")
        clock.advance(by: .milliseconds(1))
        _ = status.current
        #expect(await ServerKit.eventually { status.current.count == 1 }, "records written by other processes are seen once the answer is old")
        #expect(reads.value == 3)
    }

    @Test("once the answer is old, requests go on with it while the records are read again: a slow read holds up none")
    func anOldAnswerIsRefreshedInTheBackground() async throws {
        let release = DispatchSemaphore(value: 0)
        let reads = Reads()
        let finished = Reads()
        let clock = ManualClock()
        let status = VerificationStatus(maximumAge: .milliseconds(100), clock: { clock.now }) {
            reads.add()
            if reads.value == 2 {
                _ = release.wait(timeout: .now() + 3)
                finished.add()
            }
            return []
        }
        _ = status.current
        clock.advance(by: .milliseconds(200))
        _ = status.current
        _ = status.current
        #expect(finished.value == 0, "answered before the slow read ended")
        #expect(await ServerKit.eventually { reads.value == 2 }, "one refresh, not one per request")
        release.signal()
        #expect(await ServerKit.eventually { finished.value == 1 })
        #expect(reads.value == 2)
    }
}
