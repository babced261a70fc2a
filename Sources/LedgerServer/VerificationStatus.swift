// Which served merchants failed their last verification, for `/healthz` (which needs no token and
// is asked every few seconds by load balancers) and `/metrics`. Reading every merchant's
// verification record on each request cost one file read per registered merchant: ten thousand
// per health check with ten thousand merchants. The answer is now kept: read again at once when this
// server recorded a verification (the nightly run); records written by other processes (`catledger
// verify`) are read again once the answer is older than `maximumAge`, on a thread of their own while
// the requests go on with the kept answer (ten thousand reads took 130-210 ms of a request's time).
//
// Thread-safety: guarded by `lock`; a read at once holds it, a refresh in the background does not.

import CatalogLedger
import CatalogModel
import Foundation

final class VerificationStatus: @unchecked Sendable {
    typealias Failed = [(merchantID: MerchantID, record: VerificationRecord)]

    let maximumAge: Duration
    private let read: @Sendable () -> Failed
    private let lock = NSLock()
    private var failed: Failed = []
    private var readAt: ContinuousClock.Instant?
    private var recordedSinceRead = false
    private var refreshing = false
    private let clock: @Sendable () -> ContinuousClock.Instant

    /// `clock` tells the age of the answer (a test passes its own to age it without waiting).
    init(maximumAge: Duration = .seconds(30), clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now },
         read: @escaping @Sendable () -> Failed) {
        self.maximumAge = maximumAge
        self.clock = clock
        self.read = read
    }

    /// The merchants whose last verification failed: read at once the first time and after a
    /// verification recorded here; once old, the kept answer while a refresh reads the records.
    var current: Failed {
        lock.withLock {
            let now = clock()
            guard let readAt, !recordedSinceRead else {
                failed = read()
                self.readAt = now
                recordedSinceRead = false
                return failed
            }
            if now - readAt >= maximumAge && !refreshing {
                refreshing = true
                Thread.detachNewThread { [self] in
                    let fresh = read()
                    lock.withLock {
                        refreshing = false
                        // A read at once that began after this one is newer: it stays.
                        guard let kept = self.readAt, kept < now else { return }
                        failed = fresh
                        self.readAt = now
                    }
                }
            }
            return failed
        }
    }

    /// This server recorded a verification: the next answer reads the records again.
    func recorded() { lock.withLock { recordedSinceRead = true } }
}
