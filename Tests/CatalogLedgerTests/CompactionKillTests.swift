// Compaction under SIGKILL: a child process (`ledger-bench compaction-kill-child`) compacts a
// ledger over and over while it appends sync runs; the test kills it at random moments, at least
// 100 times. After each kill the ledger opens (rolling an interrupted compaction forward or back),
// verifies, gives the same audit answers as the history before any compaction, and holds every
// acknowledged append, except sync bookkeeping a recorded compaction dropped by rule.

import CatalogLedger
import CatalogModel
import Foundation
import LedgerStorage
import LedgerStorageTesting
import TestSupport
import Testing

@Suite struct CompactionKillTests {
    /// At least 100 (the bar); CATLEDGER_KILL_ROUNDS may raise it (or lower it while debugging).
    static let rounds = Int(ProcessInfo.processInfo.environment["CATLEDGER_KILL_ROUNDS"] ?? "") ?? 100
    static let roundsPerDirectory = 10

    struct Ack {
        var kind: EventKind
        var dedupeKey: String
    }

    @Test("SIGKILL during compaction with appends, 100 times: the ledger opens, verifies, answers the same, keeps every acknowledged append")
    func killDuringCompaction() async throws {
        let seed = SeededGenerator.seed()
        print("CompactionKillTests seed \(seed) (set CATLEDGER_TEST_SEED to repeat)")
        var random = SeededGenerator(seed: seed)
        let started = Date()
        let template = TemporaryLedger()
        var directories = [template]
        defer { directories.forEach { $0.cleanUp() } }

        // A duplicate-heavy audit history, and the answers it gives before any compaction.
        var options = LedgerOptions()
        options.storage.durability = .none
        options.storage.segmentBytesMax = 4 * 1024
        options.snapshotEveryEvents = 0
        let history = try AuditHistoryGenerator.generate(seed: seed, steps: 60)
        try await history.write(to: template.layout, storage: options.storage)
        let historyObjects = Set(history.events.compactMap { $0.event.body.header?.objectID })
        let ledgerTimes = history.events.map(\.ledgerTime)
        let points = (0..<4).map { index in
            index % 2 == 0 ? AsOf(ledgerTimeMax: ledgerTimes.randomElement(using: &random)!)
                : AsOf(squareTimeMax: history.squareTimes.randomElement(using: &random)!)
        }
        let expected = try AuditAnswers(reader: LedgerReader(layout: template.layout), points: points, objects: historyObjects)
        let expectedFacts = try AuditAnswers(reader: LedgerReader(layout: template.layout), points: points, objects: historyObjects,
                                             derived: false)
        #expect(!expected.diagnoses.isEmpty, "the history holds rejected edits to diagnose (seed \(seed))")
        // The children then compact only what they append, so a kill lands at any step of a run.
        let first = try Ledger.open(layout: template.layout, options: options)
        _ = try await first.compact(segmentsPerRun: 2)
        try await first.close()

        var directory = template
        var acknowledged: [UInt64: Ack] = [:]
        var totalAcknowledged = 0
        var killsMidCompaction = 0
        var killsWithJournal = 0
        var killsWithTemporaryFiles = 0
        var compactionsCompleted = 0
        var runsRecorded = 0
        var markersBefore = 0
        for round in 0..<Self.rounds {
            if round % Self.roundsPerDirectory == 0 {
                directory = TemporaryLedger()
                directories.append(directory)
                try FileManager.default.copyItem(atPath: template.layout.root.string, toPath: directory.layout.root.string)
                acknowledged.removeAll()
                markersBefore = 0
            }
            let child = try ChildProcess.launch("ledger-bench", [
                "compaction-kill-child", "--dir", directory.layout.root.string, "--seed", String(seed &+ UInt64(round)),
            ])
            try child.waitUntilReady()
            usleep(UInt32.random(in: 5_000...350_000, using: &random))
            child.kill()
            let lines = child.lines()
            for line in lines where line.hasPrefix("ack ") {
                let fields = line.split(separator: " ", maxSplits: 3)
                acknowledged[UInt64(fields[1])!] = Ack(kind: EventKind(rawValue: UInt8(fields[2])!)!, dedupeKey: String(fields[3]))
                totalAcknowledged += 1
            }
            compactionsCompleted += lines.filter { $0.hasPrefix("compacted ") }.count
            if lines.last(where: { $0.hasPrefix("compact") }) == "compacting" { killsMidCompaction += 1 }
            let logFiles = try FileManager.default.contentsOfDirectory(atPath: directory.layout.logDirectory.string)
            if logFiles.contains("COMPACTION") { killsWithJournal += 1 }
            let segmentFiles = try FileManager.default.contentsOfDirectory(atPath: directory.layout.logDirectory.string + "/segments")
            if segmentFiles.contains(where: { $0.hasSuffix(".compacting") }) { killsWithTemporaryFiles += 1 }

            // Opening rolls an interrupted compaction forward (or removes its temporary files).
            let ledger = try Ledger.open(layout: directory.layout, options: options)
            let verification = LogVerifier.verify(directory: directory.layout.logDirectory)
            #expect(verification.isClean, "round \(round): \(verification.problems)")
            // As-of and entity history every round; price histories and diagnoses every tenth.
            let events = try ledger.reader.allEvents()
            let derived = round % 10 == 9
            let answers = try AuditAnswers(reader: ledger.reader, points: points, objects: historyObjects, derived: derived,
                                           events: events)
            #expect(answers == (derived ? expected : expectedFacts), "round \(round): the audit answers changed")
            let markers = events.filter { $0.kind == .compactionMarker }.count
            runsRecorded += markers - markersBefore
            markersBefore = markers
            checkAcknowledged(acknowledged, events: events, layout: directory.layout, round: round)
            try await ledger.close()
        }
        print("CompactionKillTests: \(Self.rounds) kills (\(killsMidCompaction) mid-compaction, \(killsWithJournal) with the journal, \(killsWithTemporaryFiles) with temporary files), \(compactionsCompleted) whole compactions completed, \(runsRecorded) compacted runs recorded, \(totalAcknowledged) acknowledged appends checked in \(Int(Date().timeIntervalSince(started))) s")
        #expect(killsMidCompaction >= Self.rounds / 5, "too few kills landed during a compaction to test it")
        #expect(runsRecorded > 0 && totalAcknowledged > Self.rounds)
    }

    /// Every acknowledged event is at its sequence, or was sync bookkeeping that a recorded
    /// compaction dropped because a later run of the same mode completed.
    func checkAcknowledged(_ acknowledged: [UInt64: Ack], events: [LedgerEvent], layout: LedgerLayout, round: Int) {
        let bySequence = Dictionary(uniqueKeysWithValues: events.map { ($0.sequence, $0) })
        var runs = SyncRunIndex()
        for event in events { runs.note(event) }
        let markedThrough = events.compactMap { event -> UInt64? in
            if case .compactionMarker(let marker) = event.body { marker.throughSequence } else { nil }
        }.max()
        for (sequence, ack) in acknowledged {
            if let event = bySequence[sequence] {
                #expect(event.dedupeKey == ack.dedupeKey, "round \(round): sequence \(sequence) holds another event")
                continue
            }
            let runID = ack.dedupeKey.split(separator: ":")[1]
            let recorded = (markedThrough ?? 0) >= sequence || pendingJournal(layout)
            let droppedByRule = [.syncStarted, .syncPageReceived].contains(ack.kind)
                && runs.verdict(runID: String(runID), logFullyRead: true) == .superseded && recorded
            #expect(droppedByRule, "round \(round): acknowledged \(ack.kind) at \(sequence) (\(ack.dedupeKey)) is lost")
        }
    }

    /// A run switched in but not yet recorded: its marker comes with the next compaction.
    func pendingJournal(_ layout: LedgerLayout) -> Bool {
        FileManager.default.fileExists(atPath: layout.logDirectory.string + "/COMPACTION")
    }
}
