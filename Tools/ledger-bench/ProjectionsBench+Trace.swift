import CatalogProjections
import Foundation

/// The follower's commits and checkpoints during the lag phase (`--lag-trace`), kept so that a
/// slow commit can be lined up with what ran beside it. Thread-safe (a lock): the follower and the
/// checkpointer report from their own tasks.
final class FollowTraceLog: @unchecked Sendable {
    private let lock = NSLock()
    private var commits: [FollowCommitTiming] = []
    private var checkpoints: [FollowCheckpointTiming] = []

    func record(_ event: FollowTraceEvent) {
        lock.withLock {
            switch event {
            case .commit(let timing): commits.append(timing)
            case .checkpoint(let timing): checkpoints.append(timing)
            }
        }
    }

    /// Writes three CSV files (times in milliseconds since `start`, the first append) and prints
    /// the slowest commits with their parts and any checkpoint that overlapped them.
    func write(prefix: String, start: ContinuousClock.Instant, durable: [(UInt64, ContinuousClock.Instant)],
               visible: TimesBySequence) throws {
        let (commits, checkpoints) = lock.withLock { (self.commits, self.checkpoints) }
        func ms(_ instant: ContinuousClock.Instant) -> String { String(format: "%.3f", millis(instant - start)) }

        var events = "sequence,durable_ms,visible_ms,lag_ms\n"
        for (sequence, durableAt) in durable.sorted(by: { $0.0 < $1.0 }) {
            let seen = visible.time(of: sequence)
            let lag = seen.map { String(format: "%.3f", max(0, millis($0 - durableAt))) } ?? ""
            events += "\(sequence),\(ms(durableAt)),\(seen.map(ms) ?? ""),\(lag)\n"
        }
        var commitRows = "first_sequence,last_sequence,events,received_ms,requested_ms,began_ms,statements_done_ms,committed_ms,cpu_ms,statement_ms_by_table\n"
        for commit in commits {
            let profile = commit.statementNanosByTable.sorted { $0.key < $1.key }
                .map { "\($0.key)=\(String(format: "%.3f", Double($0.value) / 1e6))" }.joined(separator: ";")
            commitRows += "\(commit.firstSequence),\(commit.lastSequence),\(commit.lastSequence - commit.firstSequence + 1),"
                + "\(ms(commit.receivedAt)),\(ms(commit.requestedAt)),\(ms(commit.beganAt)),\(ms(commit.statementsDoneAt)),"
                + "\(ms(commit.committedAt)),\(String(format: "%.3f", Double(commit.cpuNanos) / 1e6)),\"\(profile)\"\n"
        }
        var checkpointRows = "started_ms,finished_ms,wal_frames,checkpointed_frames,on_writer\n"
        for checkpoint in checkpoints {
            checkpointRows += "\(ms(checkpoint.startedAt)),\(ms(checkpoint.finishedAt)),\(checkpoint.walFrames),"
                + "\(checkpoint.checkpointedFrames),\(checkpoint.onWriter ? 1 : 0)\n"
        }
        try events.write(toFile: prefix + ".events.csv", atomically: true, encoding: .utf8)
        try commitRows.write(toFile: prefix + ".commits.csv", atomically: true, encoding: .utf8)
        try checkpointRows.write(toFile: prefix + ".checkpoints.csv", atomically: true, encoding: .utf8)
        let eventCount = commits.reduce(0) { $0 + Int($1.lastSequence - $1.firstSequence + 1) }
        let cpuNanos = commits.reduce(0) { $0 + $1.cpuNanos }
        print(String(format: "follower CPU in its transactions: %.1f µs per event (%d commits, %d events)",
                     Double(cpuNanos) / 1e3 / Double(max(eventCount, 1)), commits.count, eventCount))
        printSlowest(commits, checkpoints: checkpoints, start: start)
    }

    /// The ten commits that took longest from their first event's arrival to their commit.
    private func printSlowest(_ commits: [FollowCommitTiming], checkpoints: [FollowCheckpointTiming],
                              start: ContinuousClock.Instant) {
        let slowest = commits.sorted { $0.committedAt - $0.receivedAt > $1.committedAt - $1.receivedAt }.prefix(10)
        print("slowest follower commits (ms: arrival to commit = buffered + writer wait + statements + COMMIT):")
        for commit in slowest {
            let overlapping = checkpoints.filter { $0.startedAt < commit.committedAt && $0.finishedAt > commit.receivedAt }
            let checkpointNote = overlapping.map {
                String(format: " %@checkpoint %.1f ms (%d/%d frames)", $0.onWriter ? "writer's " : "",
                       millis($0.finishedAt - $0.startedAt), $0.checkpointedFrames, $0.walFrames)
            }.joined()
            print(String(format: "  at %.0f ms, %d events: %.1f = %.1f + %.1f + %.1f + %.1f%@",
                         millis(commit.receivedAt - start), Int(commit.lastSequence - commit.firstSequence + 1),
                         millis(commit.committedAt - commit.receivedAt), millis(commit.requestedAt - commit.receivedAt),
                         millis(commit.beganAt - commit.requestedAt), millis(commit.statementsDoneAt - commit.beganAt),
                         millis(commit.committedAt - commit.statementsDoneAt), checkpointNote))
        }
    }
}

private func millis(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e3 + Double(duration.components.attoseconds) / 1e15
}
