import ArgumentParser
import CatalogLedger
import CatalogModel
import Foundation
import LedgerQueries
import LedgerStorage
import SquareWire

struct CompactCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact",
        abstract: "Compact sealed segments: drop exact duplicate observations and superseded sync bookkeeping, merge and recompress, keep every distinct fact.",
        discussion: """
        Works on sealed segments only; the active segment is untouched. Every run that changes a segment appends a \
        compactionMarker event naming the old and new segment hashes and what was dropped by which rule (summary files \
        under <data>/compactions), and writes a snapshot at the end of the run so replays start near their target. \
        --dry-run reports what would change and writes nothing. The command needs the ledger's writer lock: run it \
        while `catledger serve` is stopped, or let the server compact with `serve --compact-at HH:MM`.

        Retention (off by default): --retain 90d also drops observations recorded more than 90 days ago that each \
        object's base fact at that horizon stands for. It never drops tombstones, conflict records or the history of \
        any object a rejected edit named, and it keeps price history as retained price-history records unless \
        --drop-price-history is given. As-of answers, diagnoses and price history at or after the horizon stay \
        identical (docs/DESIGN.md, "Compaction and retention").

        Examples:
          catledger seal && catledger compact
          catledger compact --dry-run
          catledger compact --retain 90d --json
        """
    )

    @OptionGroup var global: GlobalOptions

    @Flag(name: .customLong("dry-run"), help: "Report what would change without writing anything.")
    var dryRun = false

    @Flag(name: .customLong("hc"), help: "Recompress with LZ4 high-compression mode (slower to write, same read speed).")
    var highCompression = false

    @Option(name: .customLong("segments-per-run"), help: "Sealed segments merged into one compacted segment.")
    var segmentsPerRun = 8

    @Flag(name: .customLong("no-snapshots"), help: "Do not write snapshots at the ends of compacted runs.")
    var noSnapshots = false

    @Option(name: .customLong("retain"), help: ArgumentHelp("Keep full history only for this span (e.g. 90d, 12w); fold older observations into each object's base fact.", valueName: "DURATION"))
    var retain: String?

    @Flag(name: .customLong("drop-price-history"), help: "With --retain: do not keep the price history of the dropped observations.")
    var dropPriceHistory = false

    func validate() throws {
        guard segmentsPerRun >= 1 else { throw ValidationError("--segments-per-run must be at least 1") }
        if dropPriceHistory && retain == nil {
            throw ValidationError("--drop-price-history needs --retain DURATION (price history is only dropped with retention)")
        }
    }

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let horizon = try retain.map { try global.horizon(retaining: $0) }
            let ledger = try LedgerAccess(options: global).existingWriter()
            let bar = ProgressBar(dryRun ? "planning" : "compacting", total: nil, enabled: !global.json && Terminal.standardErrorIsTerminal)
            let result: LedgerCompactionReport
            do {
                let options = LedgerCompactionOptions(dryRun: dryRun, highCompression: highCompression, segmentsPerRun: segmentsPerRun,
                                                      snapshotsAtRunBoundaries: !noSnapshots, retainHorizon: horizon,
                                                      dropPriceHistory: dropPriceHistory)
                result = try await ledger.compact(options: options) { done, _ in
                    bar.advance(by: done - bar.done)
                }
                bar.finish()
            } catch {
                try? await ledger.close()
                throw error
            }
            try await ledger.close()
            let answer = CompactionAnswer(result)
            if global.json {
                try printJSON(answer)
                return
            }
            let time = try global.timeDisplay()
            if result.bytesExamined == 0 {
                print("No sealed segment yet: compaction and retention work on sealed segments only (the active segment rolls at \(LogWriterOptions().segmentBytesMax >> 20) MiB or after a day), so nothing \(dryRun ? "would change" : "changed"). `catledger seal` seals it now.")
            }
            let verb = dryRun ? "Would compact" : "Compacted"
            print("\(verb) \(result.runs.count) run(s): \(result.bytesBefore) -> \(result.bytesAfter) bytes in \(String(format: "%.2f", Double(result.durationNanoseconds) / 1e9)) s.")
            if answer.eventsDropped.isEmpty {
                print("No event \(dryRun ? "would be" : "was") dropped.")
            } else {
                for (reason, count) in answer.eventsDropped.sorted(by: { $0.key < $1.key }) {
                    print("  \(reason): \(count) event(s) \(dryRun ? "would be " : "")dropped")
                }
            }
            if let retention = result.retention {
                let horizonText = time.ledger(retention.horizon)
                print("Retention at \(horizonText): \(retention.objectsThinned) object(s) \(dryRun ? "would lose" : "lost") older observations, \(retention.objectsProtected) kept whole (named by rejected edits).")
                if retention.priceHistoryDropped {
                    print("  Price history of the dropped observations was not kept (--drop-price-history).")
                } else {
                    print("  Retained price-history records: \(retention.priceRecordsPlanned) needed, \(retention.priceRecordsAppended) appended.")
                }
            }
            if !result.markerSequences.isEmpty {
                print("Compaction markers at sequence(s) \(result.markerSequences.map(String.init).joined(separator: ", ")).")
            }
            if !result.snapshotSequences.isEmpty {
                print("Snapshots written at sequence(s) \(result.snapshotSequences.map(String.init).joined(separator: ", ")).")
            }
        }
    }
}
