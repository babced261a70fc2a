import ArgumentParser
import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import LedgerQueries

/// Rejected upserts in the ledger, each with its diagnosis.
struct ConflictsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conflicts",
        abstract: "List rejected upserts (VERSION_MISMATCH and others) with their classification.",
        discussion: """
        Examples:
          catledger conflicts --since "last month" --class staleMovedOnByOtherWriter
          catledger conflicts --device "backroom iPad" --json
        """)

    @OptionGroup var global: GlobalOptions

    @Option(help: "Only incidents recorded at or after this time.")
    var since: String?

    @Option(help: "Only incidents recorded at or before this time.")
    var until: String?

    @Option(name: .customLong("class"), help: "Only incidents with this classification (e.g. staleMovedOnByOtherWriter).")
    var classification: String?

    @Option(help: "Only incidents from this device.")
    var device: String?

    @Option(help: "Only incidents of this actor.")
    var actor: String?

    @Option(help: "Read the incidents a projection database holds (e.g. a replay to a past moment) instead of the ledger.")
    var db: String?

    func run() async throws {
        try await reportingErrors(json: global.json) {
            if let classification, !VersionMismatchDiagnosis.Classification.allCases.contains(where: { $0.rawValue == classification }) {
                throw CLIError(.usage, "unknown class \"\(classification)\"",
                               hint: "one of " + VersionMismatchDiagnosis.Classification.allCases.map(\.rawValue).joined(separator: ", "))
            }
            let window = try global.window(since: since, until: until)
            let filter = ConflictFilter(since: window.since, until: window.until,
                                        classification: classification, device: device, actor: actor)
            let access = LedgerAccess(options: global)
            let answer: ConflictsAnswer
            if let db {
                // A replay file answers without a ledger; names come from the ledger when there is one.
                let conflicts: [ConflictAnswer]
                do {
                    conflicts = try access.projection(db: db).conflictAnswers(filter)
                } catch let error as UnreadableConflictRow {
                    throw CLIError(.corruptData, "\(error) in \(db)", hint: "rebuild the file with `catledger replay`")
                }
                answer = try access.queriesIfLedger()?.named(conflicts) ?? ConflictsAnswer(conflicts: conflicts, names: CatalogNames())
            } else {
                answer = try access.queries().conflictsAnswer(filter)
            }
            if global.json { try printJSON(answer); return }
            let time = try global.timeDisplay()
            let rows = answer.conflicts
            if rows.isEmpty {
                let filtered = since != nil || until != nil || classification != nil || device != nil || actor != nil
                print(filtered ? "No rejected upsert matches." : "No rejected upserts in the ledger.")
                return
            }
            var table = TextTable(["incident", "rejected at", "device", "error", "class", "objects"],
                                  alignments: [.right, .left, .left, .left, .left, .left])
            for row in rows {
                let diagnosis = row.diagnosis
                table.append(["\(row.sequence)", time.ledger(diagnosis.rejectedAt), diagnosis.device ?? "-",
                              diagnosis.errorCodes.joined(separator: ","), diagnosis.primaryClassification.rawValue,
                              row.staleObjectIDs.map(answer.names(of: row).labelled).joined(separator: ", ")])
            }
            print(table.render())
            print("\nExplain one with `catledger diagnose INCIDENT`.")
        }
    }
}

struct DiagnoseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diagnose",
        abstract: "Explain a rejected upsert: which object was stale, what moved it on, which trap it was, and the fix.",
        discussion: """
        Examples:
          catledger diagnose edit-0004
          catledger diagnose 272 --tz Europe/Paris
          catledger diagnose edit-0004 --json
          catledger diagnose edit-0004 --db past.sqlite
        """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The incident: the rejection's sequence (from `catledger conflicts`) or the request's idempotency key.")
    var incident: String

    @Option(help: "Read the incidents a projection database holds (e.g. a replay to a past moment) instead of the ledger.")
    var db: String?

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let access = LedgerAccess(options: global)
            let found: DiagnosisAnswer?
            do {
                found = if let db { try access.projectionLedger(db: db).diagnosis(named: incident) }
                    else { try access.queries().diagnosis(named: incident) }
            } catch let error as UnreadableConflictRow {
                throw CLIError(.corruptData, "\(error) in \(db ?? "the projection")", hint: "rebuild the file with `catledger replay`")
            }
            guard let answer = found else {
                throw CLIError(.notFound, "no rejected upsert \"\(incident)\" in \(db ?? "the ledger")",
                               hint: "list them with `catledger conflicts\(db.map { " --db \($0)" } ?? "")`")
            }
            if global.json { try printJSON(answer) } else { print(answer.text(try global.timeDisplay())) }
        }
    }
}
