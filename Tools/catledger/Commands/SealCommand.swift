import ArgumentParser
import CatalogLedger
import Foundation

/// `catledger seal`: closes the active segment so compaction can take it.
struct SealCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seal",
        abstract: "Seal the active segment now, so `catledger compact` can take the events it holds.",
        discussion: """
        Compaction rewrites sealed segments only, and a segment is sealed when it reaches 64 MiB or a day \
        of age, so a small or young ledger has nothing to compact. `seal` writes the active segment's \
        footer, index and manifest entry now and starts a new one; nothing else changes. An empty active \
        segment is left as it is. Needs the writer lock (stop `catledger serve` first).

        Examples:
          catledger seal --data-dir demo-ledger
          catledger seal --data-dir demo-ledger && catledger compact --data-dir \\
              demo-ledger
        """)

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let ledger = try LedgerAccess(options: global).existingWriter()
            let report: SealReport
            do {
                report = try await ledger.sealActiveSegment()
            } catch {
                try? await ledger.close()
                throw error
            }
            try await ledger.close()
            if global.json { try printJSON(report); return }
            if let sealed = report.sealed {
                print("Sealed \(sealed): \(report.sealedSegments) sealed segment(s) now; the next event is \(report.nextSequence). " +
                      "`catledger compact` can take them.")
            } else {
                print("The active segment holds no event yet: nothing to seal (\(report.sealedSegments) sealed segment(s)).")
            }
        }
    }
}
