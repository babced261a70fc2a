// Which served merchants failed their last verification, for `/healthz` (which needs no token and
// is asked every few seconds by load balancers) and `/metrics`. Reading every merchant's
// verification record on each request cost one file read per registered merchant: ten thousand
// per health check with ten thousand merchants. The answer is now kept: read again when this
// server recorded a verification (the nightly run) or, for records written by other processes
// (`catledger verify`), once it is older than `maximumAge`.
//
// Thread-safety: guarded by `lock`; one reader at a time rereads the records, the others wait for it.

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

    init(maximumAge: Duration = .seconds(30), read: @escaping @Sendable () -> Failed) {
        self.maximumAge = maximumAge
        self.read = read
    }

    /// The merchants whose last verification failed.
    var current: Failed {
        lock.withLock {
            let now = ContinuousClock.now
            if recordedSinceRead || readAt.map({ now - $0 >= maximumAge }) ?? true {
                failed = read()
                readAt = now
                recordedSinceRead = false
            }
            return failed
        }
    }

    /// This server recorded a verification: the next answer reads the records again.
    func recorded() { lock.withLock { recordedSinceRead = true } }
}
