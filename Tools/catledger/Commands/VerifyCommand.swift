import ArgumentParser
import CatalogLedger
import LedgerStorage

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every segment, checksum, the hash chain, footers, sequences, indexes and events.",
        discussion: """
        Exits 0 when the ledger is sound and 5 when anything is wrong, listing every problem with its location. \
        The outcome is recorded in <data-dir>/verification.json: while it says the ledger failed, `show`, `search` \
        and the server's /healthz and /metrics say so.
        """
    )

    @OptionGroup var global: GlobalOptions

    struct Report: Encodable {
        var ok: Bool
        var segments: Int
        var batches: Int
        var records: UInt64
        var highestSequence: UInt64?
        var eventsDecoded: Int
        var problems: [String]
    }

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let access = LedgerAccess(options: global)
            let reader = try access.reader()
            let storage = LogVerifier.verify(directory: access.layout.logDirectory)
            var problems = storage.problems.map(\.description)
            var decoded = 0
            if storage.isClean {
                // The bytes are sound; every event must also decode.
                do {
                    var cursor = try reader.events()
                    while try cursor.next() != nil { decoded += 1 }
                } catch {
                    problems.append("\(error)")
                }
            }
            // Recorded for `show`, `search` and the server; a read-only data directory keeps the old record.
            try? VerificationRecord(scope: .full, problems: problems).save(layout: access.layout)
            let report = Report(ok: problems.isEmpty, segments: storage.segmentsChecked, batches: storage.batchesChecked,
                                records: storage.recordsChecked, highestSequence: storage.highestSequence,
                                eventsDecoded: decoded, problems: problems)
            if global.json {
                try printJSON(report)
            } else {
                print("Checked \(report.segments) segments, \(report.batches) batches, \(report.records) records; " +
                      "\(decoded) events decoded.")
                if report.ok {
                    print(Terminal.colour("OK", "32") + ": checksums, hash chain, footers, sequences and indexes are sound.")
                } else {
                    print(Terminal.colour("\(problems.count) problem(s):", "31"))
                    for problem in problems { print("  - \(problem)") }
                }
            }
            if !report.ok { throw ExitCode(CLIError.Kind.corruptData.rawValue) }
        }
    }
}
