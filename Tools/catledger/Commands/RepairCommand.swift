import ArgumentParser
import CatalogLedger
import Foundation
import LedgerStorage

/// `catledger repair`: the explicit repair that recovery never does by itself (LogRepair).
struct RepairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "repair",
        abstract: "Cut the log just before its first damaged batch (after `catledger verify` found damage).",
        discussion: """
        Without --confirm, shows what would be removed (the segment cut short and where, whole segments after it, \
        the sequences lost) and changes nothing. With --confirm, removes it, settles the ledger (snapshots beyond \
        the new end are dropped, indexes rebuilt) and records a fresh verification. Events after the damage are \
        lost from this ledger: keep a copy of the data directory, or re-import / re-sync them afterwards. Needs \
        the writer lock (stop `catledger serve` first). Exits 0 when the log is sound or was repaired, 5 when \
        damage remains after the cut.

        Examples:
          catledger verify || catledger repair
          catledger repair --confirm
        """)

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Really cut the log (without it, only the plan is shown).")
    var confirm = false

    struct Report: Encodable {
        var applied: Bool
        var damage: String?
        var truncatedSegment: String?
        var truncatedAtOffset: UInt64?
        var removedSegments: [String]
        var bytesRemoved: UInt64
        var firstRemovedSequence: UInt64?
        var lastRemovedSequence: UInt64?
        var remainingProblems: [String]
    }

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let access = LedgerAccess(options: global)
            _ = try access.reader()  // no ledger there: exit 4, nothing created
            let repair = try LogRepair.truncateAtFirstDamage(directory: access.layout.logDirectory, confirm: confirm,
                                                             logger: try global.logger("catledger.repair"))
            var remaining: [String] = []
            if repair.applied {
                // Settle what the cut leaves behind (snapshots past the end, indexes, manifest), then record
                // the state of the repaired log.
                let ledger = try access.existingWriter()
                try await ledger.close()
                remaining = LogVerifier.verify(directory: access.layout.logDirectory).problems.map(\.description)
                try? VerificationRecord(scope: .repair, problems: remaining).save(layout: access.layout)
            }
            let report = Report(
                applied: repair.applied, damage: repair.firstDamage?.description, truncatedSegment: repair.truncatedSegment,
                truncatedAtOffset: repair.truncatedAtOffset, removedSegments: repair.removedSegments,
                bytesRemoved: repair.bytesRemoved, firstRemovedSequence: repair.removedSequences?.lowerBound,
                lastRemovedSequence: repair.removedSequences?.upperBound, remainingProblems: remaining)
            if global.json {
                try printJSON(report)
            } else if let damage = repair.firstDamage {
                print("First damage: \(damage)")
                let verb = repair.applied ? "Removed" : "Would remove"
                if let segment = repair.truncatedSegment, let offset = repair.truncatedAtOffset {
                    print("\(verb) \(segment) from byte \(offset) on.")
                }
                if !repair.removedSegments.isEmpty {
                    print("\(verb) whole segment(s): \(repair.removedSegments.joined(separator: ", ")).")
                }
                if let lost = repair.removedSequences {
                    print("\(verb) sequences \(lost.lowerBound)...\(lost.upperBound) (\(repair.bytesRemoved) bytes).")
                }
                if !repair.applied {
                    print("Nothing was changed. Run `catledger repair --confirm --data-dir \(global.dataDirectory)` to cut the log there.")
                } else if remaining.isEmpty {
                    print("Repaired: the log now verifies clean.")
                } else {
                    print("\(remaining.count) problem(s) remain:")
                    for problem in remaining { print("  - \(problem)") }
                }
            } else {
                print("No damage to repair: the log has no damaged batch or segment.")
            }
            if !remaining.isEmpty { throw ExitCode(CLIError.Kind.corruptData.rawValue) }
        }
    }
}
