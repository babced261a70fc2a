// Square as it is on a bad day, for the server chaos test and the benchmarks: the simulator's HTTP
// server can answer a share of its requests (or all of them) with a fault instead of the catalog's
// answer. Real Square answers 429 when a catalog write contends with another (a POS save, the
// dashboard), 500 and 503 when it is unwell, and a network between here and there can be slow,
// silent or cut. Each fault is what a client meets on the wire: a status with Square's error body,
// an answer that is not JSON, an answer that comes late or never, a connection closed without one.
//
// Thread-safety: `lock` guards the mode and the counts.

import Foundation

/// One way Square fails a request.
public enum SimulatorFault: Sendable, Hashable, CustomStringConvertible {
    /// Answers with `status` (429, 500, 503, ...) and Square's error body for it.
    case status(Int)
    /// A 200 whose body is not JSON (a proxy's error page, a truncated answer).
    case garbage
    /// The right answer, after `delay`.
    case slow(Duration)
    /// No answer until the fault is lifted (or the client gives up).
    case silent
    /// The connection is closed without an answer (a reset, a crashed front end).
    case reset

    public var description: String {
        switch self {
        case .status(let code): "\(code)"
        case .garbage: "garbage"
        case .slow(let delay): "slow \(delay)"
        case .silent: "silent"
        case .reset: "reset"
        }
    }

    /// Reads `429`, `500`, `503`, `garbage`, `silent`, `reset` or `slow:250ms` / `slow:2s`.
    public init?(parsing text: String) {
        switch text.lowercased() {
        case "garbage": self = .garbage
        case "silent", "timeout": self = .silent
        case "reset": self = .reset
        case let other where other.hasPrefix("slow:"):
            let value = other.dropFirst("slow:".count)
            if value.hasSuffix("ms"), let ms = Int(value.dropLast(2)), ms >= 0 { self = .slow(.milliseconds(ms)) }
            else if value.hasSuffix("s"), let s = Int(value.dropLast()), s >= 0 { self = .slow(.seconds(s)) }
            else { return nil }
        case let other:
            guard let code = Int(other), (400...599).contains(code) else { return nil }
            self = .status(code)
        }
    }
}

/// Which faults the simulator's server injects, changeable while it serves.
public final class SimulatorFaults: @unchecked Sendable {
    private let lock = NSLock()
    private var faults: [SimulatorFault] = []
    private var rate = 0.0
    private var writesOnly = false
    private var generator: SeededRandom
    private var injected: [String: Int] = [:]
    private var served = 0
    /// Requests waiting in `silent`: released when the fault is lifted.
    private var silenced: [CheckedContinuation<Void, Never>] = []

    public init(seed: UInt64 = 1) { generator = SeededRandom(seed: seed) }

    /// From now on, `rate` (0...1) of the requests (only catalog writes when `writesOnly`) meet one
    /// of `faults`, drawn at random; an empty list or a rate of 0 lifts every fault.
    public func set(_ faults: [SimulatorFault], rate: Double = 1, writesOnly: Bool = false) {
        let released = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            self.faults = faults
            self.rate = min(max(rate, 0), 1)
            self.writesOnly = writesOnly
            guard faults.isEmpty || rate == 0 || !faults.contains(.silent) else { return [] }
            defer { silenced = [] }
            return silenced
        }
        for continuation in released { continuation.resume() }
    }

    /// Every fault lifted; the requests held silent go on to their answers.
    public func clear() { set([]) }

    /// How many requests met each fault (by its description), and how many were answered normally.
    public var counts: (injected: [String: Int], served: Int) { lock.withLock { (injected, served) } }

    /// The fault for one request (nil: answer it normally), counted.
    func draw(isWrite: Bool) -> SimulatorFault? {
        lock.withLock {
            guard !faults.isEmpty, rate > 0, !writesOnly || isWrite else {
                served += 1
                return nil
            }
            let roll = Double(generator.next() >> 11) / Double(1 << 53)
            guard roll < rate else {
                served += 1
                return nil
            }
            let fault = faults[Int(generator.next() % UInt64(faults.count))]
            injected[fault.description, default: 0] += 1
            return fault
        }
    }

    /// Waits until the silent fault is lifted (or the task is cancelled: the client hung up).
    func waitWhileSilent() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let holds = lock.withLock { () -> Bool in
                    guard faults.contains(.silent), rate > 0 else { return false }
                    silenced.append(continuation)
                    return true
                }
                if !holds { continuation.resume() }
            }
        } onCancel: {
            // A cancelled wait is released with the others at the next `set`; nothing to undo here.
        }
    }

    /// Square's error body for an injected status.
    static func errorBody(status: Int) -> [UInt8] {
        let (category, code) = switch status {
        case 429: ("RATE_LIMIT_ERROR", "RATE_LIMITED")
        case 503: ("API_ERROR", "SERVICE_UNAVAILABLE")
        case 500...: ("API_ERROR", "INTERNAL_SERVER_ERROR")
        default: ("INVALID_REQUEST_ERROR", "BAD_REQUEST")
        }
        return Array(#"{"errors":[{"category":"\#(category)","code":"\#(code)","detail":"injected by the simulator"}]}"#.utf8)
    }

    /// Whether a request writes the catalog (the calls Square serialises per seller).
    static func isWrite(method: String, path: String) -> Bool {
        method != "GET" && !path.hasSuffix("/search") && !path.hasSuffix("/search-catalog-items")
            && !path.hasSuffix("/batch-retrieve") && path.hasPrefix("/v2/catalog")
    }
}
