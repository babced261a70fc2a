import Logging

/// Runs one operation at a time and folds bursts of triggers into as few runs as possible.
///
/// Webhooks arrive in bursts (one dashboard edit can send several notifications, and Square
/// redelivers), but each only says "the catalog moved": one incremental sync covers them all. A
/// trigger while idle schedules a run after `debounce`; triggers before that run starts join it;
/// a trigger while a run is in progress schedules exactly one more run after it, so a change that
/// landed mid-run is never missed.
///
/// Thread-safety: an actor; `trigger()` never waits for the operation.
public actor CoalescingRunner {
    enum Phase: Equatable {
        case idle
        case scheduled
        case running(again: Bool)
    }

    private let debounce: Duration
    /// Where the runs run (nil: the cooperative pool).
    private let executor: (any TaskExecutor)?
    /// The runs' task priority (nil: the triggering task's).
    private let priority: TaskPriority?
    private let operation: @Sendable () async -> Void
    private var phase = Phase.idle
    private var current: Task<Void, Never>?
    private var closed = false
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []

    /// Runs started so far.
    public private(set) var runsStarted = 0
    /// Triggers received so far (accepted or folded into a run).
    public private(set) var triggersReceived = 0

    /// `executor`: where the runs run, e.g. a server's low-priority background threads, so that under
    /// load the runs wait (and more triggers fold into each) rather than the requests; nil: the
    /// cooperative pool. `priority`: the runs' task priority (nil: the triggering task's), e.g.
    /// `.utility` on a server's background lane, whose urgent jobs (an edit) then run first.
    public init(debounce: Duration = .zero, executor: (any TaskExecutor)? = nil, priority: TaskPriority? = nil,
                operation: @escaping @Sendable () async -> Void) {
        self.debounce = debounce
        self.executor = executor
        self.priority = priority
        self.operation = operation
    }

    /// Asks for a run. Returns at once.
    public func trigger() {
        guard !closed else { return }
        triggersReceived += 1
        switch phase {
        case .idle: schedule()
        case .scheduled: break
        case .running: phase = .running(again: true)
        }
    }

    private func schedule() {
        phase = .scheduled
        let debounce = debounce
        current = Task(executorPreference: executor, priority: priority) {
            if debounce > .zero { try? await Task.sleep(for: debounce) }
            await self.runNow()
        }
    }

    private func runNow() async {
        guard phase == .scheduled else { return }
        phase = .running(again: false)
        runsStarted += 1
        await operation()
        finishRun()
    }

    private func finishRun() {
        if case .running(let again) = phase, again, !closed {
            schedule()
            return
        }
        becomeIdle()
    }

    private func becomeIdle() {
        phase = .idle
        current = nil
        let waiters = idleWaiters
        idleWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// True while a run is scheduled or in progress.
    public var isBusy: Bool { phase != .idle }

    /// Returns once no run is scheduled or in progress.
    public func waitUntilIdle() async {
        guard phase != .idle else { return }
        await withCheckedContinuation { idleWaiters.append($0) }
    }

    /// Stops accepting triggers and waits for the run in progress (a scheduled one still runs, so
    /// an acknowledged webhook is still followed by its sync).
    public func shutdown() async {
        closed = true
        await waitUntilIdle()
    }

    /// Stops accepting triggers and drops a run scheduled and not yet started (its debounce is cut
    /// short); a run in progress goes on, without a run after it. For a server that is stopping: it
    /// starts no new work, and a sync it does not run is fetched by the next start's catch-up.
    public func stopStarting() {
        closed = true
        switch phase {
        case .idle: break
        case .scheduled:
            current?.cancel()
            becomeIdle()
        case .running: phase = .running(again: false)
        }
    }

    /// `stopStarting`, and cancels the run in progress: its operation sees the cancellation (a
    /// server's shutdown whose grace period is over). Returns at once; `waitUntilIdle` waits for the
    /// run to end.
    public func cancel() {
        stopStarting()
        current?.cancel()
    }
}
