import Foundation
@testable import LedgerServer
import Synchronization
import Testing
import WebhookInbox

/// The drain's gathering (`InboxDrain`) on its own, over a real inbox, with the server's clock in the
/// test's hands: deliveries that set nothing off wait for company until their deadline, and always
/// reach the ledger by it, whatever the wall clock does meanwhile.
@Suite struct InboxDrainGatherTests {
    typealias Kit = IngestKit

    /// The server's clock: the wall clock minus an offset the test sets (a clock stepped back).
    final class SteppedClock: Sendable {
        private let offset = Atomic<Int64>(0)
        func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1e9) - offset.load(ordering: .relaxed) }
        func stepBack(_ duration: Duration) { offset.add(duration.wholeNanoseconds, ordering: .relaxed) }
    }

    /// What the drain appended, by event id.
    final class Recorded: Sendable {
        private let ids = Mutex<[String]>([])
        func add(_ deliveries: [InboxDelivery]) { ids.withLock { $0 += deliveries.map(\.eventID) } }
        var all: [String] { ids.withLock { $0 } }
    }

    /// The drain over an inbox in a new data root, gathering for `gather` (nothing urgent unless said).
    static func withDrain(gather: Duration, clock: SteppedClock, isUrgent: @escaping @Sendable (InboxDelivery) -> Bool = { _ in false },
                          _ body: (LocalDeliveryInbox, Recorded) async throws -> Void) async throws {
        let root = try Kit.temporaryDirectory()
        defer { Kit.cleanUp(root) }
        let inbox = try LocalDeliveryInbox.open(dataRoot: root.path)
        let recorded = Recorded()
        let drain = InboxDrain(inbox: inbox, metrics: ServerMetrics(), logger: Kit.logger, gatherDelay: gather,
                               isUrgent: isUrgent, now: { clock.now() }) { _, deliveries in
            recorded.add(deliveries)
            return true
        }
        inbox.onAccepted = { [weak drain] deliveries in drain?.accepted(deliveries) }
        do {
            try await body(inbox, recorded)
        } catch {
            await drain.stop()
            inbox.close()
            throw error
        }
        await drain.stop()
        inbox.close()
    }

    static func accept(_ inbox: LocalDeliveryInbox, _ eventID: String, clock: SteppedClock) async throws {
        _ = try await inbox.accept(merchantID: Kit.merchant, eventID: eventID, body: Array(eventID.utf8), headers: [],
                                   receivedAt: clock.now())
    }

    /// The gather timer sleeps on the monotonic clock; the deadline is the server's wall clock. When
    /// the wall clock was set back meanwhile, the timer fires before the deadline and the drain waits
    /// again for it. Before, that second wait armed no timer (one counted as armed for that deadline
    /// already), and the deliveries waited for the merchant's next one, however long.
    @Test("a drain gathering when the wall clock is set back still appends by the deadline")
    func aClockSetBackDoesNotStrandTheGathering() async throws {
        let clock = SteppedClock()
        // Stepped back once the drain has looked at the delivery (and so armed its timer right after):
        // the timer fires 2 s after the accept, when the stepped clock reads 1 s before the deadline.
        let looked = Atomic<Bool>(false)
        try await Self.withDrain(gather: .seconds(2), clock: clock, isUrgent: { _ in
            looked.store(true, ordering: .relaxed)
            return false
        }) { inbox, recorded in
            try await Self.accept(inbox, "calm", clock: clock)
            // (On a stalled machine the deadline may pass first: the delivery is then appended at once.)
            #expect(await ServerKit.eventually { looked.load(ordering: .relaxed) || !recorded.all.isEmpty })
            try await Task.sleep(for: .milliseconds(100))
            clock.stepBack(.seconds(3))
            #expect(await ServerKit.eventually { recorded.all == ["calm"] }, "appended once the deadline passed by the stepped clock")
        }
    }

    /// A delivery accepted while the drain was deciding whether its batch may wait (between taking the
    /// batch and starting to wait, here held open by a slow look at the first delivery) is looked at
    /// before the drain waits. Before, nothing woke the drain for it: an urgent delivery (a revocation,
    /// a version to sync) waited the whole gather delay.
    @Test("a delivery accepted while the drain decides to wait is looked at first: an urgent one is appended at once")
    func aDeliveryArrivingBeforeTheWaitIsLookedAt() async throws {
        let clock = SteppedClock()
        let looking = Atomic<Bool>(false)
        try await Self.withDrain(gather: .seconds(60), clock: clock, isUrgent: { delivery in
            guard delivery.eventID == "calm" else { return true }
            looking.store(true, ordering: .relaxed)
            Thread.sleep(forTimeInterval: 0.5)
            return false
        }) { inbox, recorded in
            try await Self.accept(inbox, "calm", clock: clock)
            #expect(await ServerKit.eventually { looking.load(ordering: .relaxed) })
            try await Self.accept(inbox, "urgent", clock: clock)
            #expect(await ServerKit.eventually(timeout: .seconds(45)) { recorded.all == ["calm", "urgent"] },
                    "appended at once with the delivery before it, not after the 60 s gather")
        }
    }
}
