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

    struct Row: Encodable {
        var incident: UInt64
        var idempotencyKey: String
        var rejectedAt: String
        var actor: String?
        var device: String?
        var httpStatus: UInt16
        var errorCodes: [String]
        var classification: String
        var staleObjects: [String]
    }

    func run() async throws {
        try await reportingErrors(json: global.json) {
            if let classification, !VersionMismatchDiagnosis.Classification.allCases.contains(where: { $0.rawValue == classification }) {
                throw CLIError(.usage, "unknown class \"\(classification)\"",
                               hint: "one of " + VersionMismatchDiagnosis.Classification.allCases.map(\.rawValue).joined(separator: ", "))
            }
            let filter = ConflictFilter(since: try since.map(global.time), until: try until.map(global.time),
                                        classification: classification, device: device, actor: actor)
            let conflicts = try db.map { try Self.conflicts(inProjection: $0, filter, access: LedgerAccess(options: global)) }
                ?? LedgerAccess(options: global).asOfQueries().conflicts(filter)
            let zone = try global.timeZone()
            let rows = conflicts.map { answer in
                let diagnosis = answer.diagnosis
                return Row(incident: answer.sequence, idempotencyKey: diagnosis.idempotencyKey,
                           rejectedAt: formatTime(diagnosis.rejectedAt, in: zone), actor: diagnosis.actor,
                           device: diagnosis.device, httpStatus: diagnosis.httpStatus, errorCodes: diagnosis.errorCodes,
                           classification: diagnosis.primaryClassification.rawValue,
                           staleObjects: answer.staleObjectIDs.map(\.rawValue))
            }
            if global.json { try printJSON(rows); return }
            if rows.isEmpty {
                let filtered = since != nil || until != nil || classification != nil || device != nil || actor != nil
                print(filtered ? "No rejected upsert matches." : "No rejected upserts in the ledger.")
                return
            }
            var table = TextTable(["incident", "rejected at", "device", "error", "class", "objects"],
                                  alignments: [.right, .left, .left, .left, .left, .left])
            for row in rows {
                table.append(["\(row.incident)", row.rejectedAt, row.device ?? "-", row.errorCodes.joined(separator: ","),
                              row.classification, row.staleObjects.joined(separator: " ")])
            }
            print(table.render())
            print("\nExplain one with `catledger diagnose INCIDENT`.")
        }
    }
}

extension ConflictsCommand {
    /// The incidents of a projection's `version_conflicts` table: each row keeps the diagnosis the
    /// one diagnoser gave when the projection met the rejection (`DiagnosisIndex`).
    static func conflicts(inProjection path: String, _ filter: ConflictFilter, access: LedgerAccess) throws -> [ConflictAnswer] {
        let records = try access.projection(db: path).conflicts(limit: Int.max)
        return try records.reversed().map { record in
            do {
                return ConflictAnswer(sequence: record.sequence, diagnosis: try JSONDecoder().decode(
                    VersionMismatchDiagnosis.self, from: Data(record.diagnosisJSON.utf8)))
            } catch {
                throw CLIError(.corruptData, "the diagnosis of incident \(record.sequence) in \(path) cannot be read",
                               hint: "rebuild the file with `catledger replay`")
            }
        }.filter { filter.keeps($0.diagnosis) }
    }
}

struct DiagnoseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diagnose",
        abstract: "Explain a rejected upsert: which object was stale, what moved it on, which trap it was, and the fix.")

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The incident: the rejection's sequence (from `catledger conflicts`) or the request's idempotency key.")
    var incident: String

    func run() async throws {
        try await reportingErrors(json: global.json) {
            guard let diagnosis = try LedgerAccess(options: global).asOfQueries().conflict(named: incident)?.diagnosis else {
                throw CLIError(.notFound, "no rejected upsert \"\(incident)\" in the ledger",
                               hint: "list them with `catledger conflicts`")
            }
            if global.json { try printJSON(diagnosis) } else { print(diagnosis.renderedText) }
        }
    }
}
