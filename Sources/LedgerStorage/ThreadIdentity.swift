// The name and scheduling priority of the threads the ledger starts for itself (I/O pools, commit and
// sync threads, background executors). The kernel's thread name is what `top -H`, `ps -L` and `perf`
// show; without it every such thread carries the name of the thread that created it. The nice value is
// set from the process's own (its main thread's), not from the creating thread's: Linux gives a new
// thread its creator's nice, so a pool first used from a lowered background thread would otherwise run
// every later request's I/O at that lowered priority.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

public enum ThreadIdentity {
    /// Starts a thread that runs `body` under `name` (Foundation's and the kernel's) at the process's
    /// nice value plus `niceIncrement` (`adopt`); `body` gets the nice value applied.
    public static func start(name: String, niceIncrement: Int32 = 0, _ body: @escaping @Sendable (_ appliedNice: Int32?) -> Void) {
        let thread = Thread { body(adopt(name: name, niceIncrement: niceIncrement)) }
        thread.name = name
        thread.start()
    }

    /// Names the calling thread (at most 15 bytes are kept, the kernel's limit) and sets its nice value
    /// to the process's plus `niceIncrement` (capped at 19). Returns the nice value applied, or nil
    /// where it could not be set (then the thread keeps the priority it was created with).
    @discardableResult
    public static func adopt(name: String, niceIncrement: Int32 = 0) -> Int32? {
        #if os(Linux)
        // pthread_setname_np is not imported (a GNU extension); the kernel takes the name from this file too.
        let comm = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        if comm >= 0 {
            let bytes = Array(name.utf8.prefix(15))
            _ = bytes.withUnsafeBytes { write(comm, $0.baseAddress, $0.count) }
            close(comm)
        }
        // The kernel thread id, from /proc/thread-self -> "<pid>/task/<tid>" (gettid is not imported).
        guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"),
              let last = link.split(separator: "/").last, let threadID = id_t(last) else { return nil }
        errno = 0
        let base = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(getpid()))
        guard errno == 0 else { return nil }
        let target = min(base + niceIncrement, 19)
        // Raising a thread's priority back to the process's is refused without CAP_SYS_NICE when the
        // creator was lowered and RLIMIT_NICE is 0: the thread then keeps the creator's value.
        guard setpriority(__priority_which_t(PRIO_PROCESS.rawValue), threadID, target) == 0 else { return nil }
        return target
        #else
        return nil
        #endif
    }
}
