// Each open merchant holds about fifteen files (its log segment, the history index and the
// projection with their WAL and shared-memory files, the writer lock); a server with a thousand
// merchants busy at once needs more descriptors than the usual soft limit of 1,024 allows. The
// server raises its soft limit to the hard one at start, as servers commonly do (the hard limit
// is what the administrator allows; the soft one is only a default).

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging

enum OpenFileLimit {
    /// Open files each open merchant holds, about (measured: `ledger-bench merchants`).
    static let filesPerOpenMerchant = 15

    /// Raises the soft limit on open files to the hard limit; returns the limit in force afterwards
    /// (nil when it cannot be read).
    @discardableResult
    static func raise(logger: Logger) -> UInt64? {
        var limit = rlimit()
        guard getrlimit(resourceNumber, &limit) == 0 else { return nil }
        let before = UInt64(limit.rlim_cur)
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resourceNumber, &raised) == 0 { limit = raised }
        }
        let now = UInt64(limit.rlim_cur)
        let merchants = now / UInt64(filesPerOpenMerchant)
        logger.info("open file limit", metadata: ["soft": "\(now)", "was": "\(before)",
                                                  "open_merchants_it_allows": "\(merchants)"])
        if now < 4096 {
            logger.warning("the open file limit allows about \(merchants) merchants open at once; raise it (ulimit -n, LimitNOFILE=) to serve more")
        }
        return now
    }

    #if canImport(Glibc)
    private static let resourceNumber = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resourceNumber = RLIMIT_NOFILE
    #endif
}
