import ArgumentParser
import CatalogLedger
import CatalogModel
import LedgerQueries
import LedgerStorage

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every segment, checksum, the hash chain, footers, sequences, indexes and events.",
        discussion: """
        Exits 0 when the ledger is sound and 5 when anything is wrong, listing every problem with its location. \
        The outcome is recorded in <data-dir>/verification.json: while it says the ledger failed, `show`, `search` \
        and the server's /healthz and /metrics say so.

        Examples:
          catledger verify
          catledger verify --json
        """
    )

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let access = LedgerAccess(options: global)
            let reader = try access.reader()
            let storage = LogVerifier.verify(directory: access.layout.logDirectory)
            var problems = storage.problems.map(\.description)
            var decoded = 0
            var facts: [LedgerEvent] = []
            var claims = ClaimConfirmation()
            if storage.isClean {
                // The bytes are sound; every event must also decode.
                do {
                    var cursor = try reader.events()
                    while let event = try cursor.next() {
                        decoded += 1
                        if event.header != nil { facts.append(event) }
                        claims.add(event)
                    }
                } catch {
                    problems.append("\(error)")
                }
            }
            // Recorded for `show`, `search` and the server; a read-only data directory keeps the old record.
            try? VerificationRecord(scope: .full, problems: problems)
                .flagging(unconfirmed: claims.unconfirmed.map(\.line)).save(layout: access.layout)
            // Same-version twins: how the join decided them, and the ones that need a person.
            let history = CatalogHistory(events: facts)
            let twins = history.twinCounts()
            let report = VerifyAnswer(ok: problems.isEmpty, segments: storage.segmentsChecked, batches: storage.batchesChecked,
                                records: storage.recordsChecked, highestSequence: storage.highestSequence,
                                eventsDecoded: decoded, problems: problems, twinPairs: twins.pairs,
                                twinPairsNestedOnly: twins.nestedOnly, anomalies: history.sameVersionTwins(),
                                unconfirmedClaims: claims.unconfirmed)
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
                if report.twinPairs > 0 {
                    print("\(report.twinPairs) object version(s) observed more than once with different bytes; " +
                          "\(report.twinPairsNestedOnly) differ only in nested children, which every as-of answer " +
                          "rebuilds from the children's own facts.")
                }
                if !report.anomalies.isEmpty {
                    print(Terminal.colour("\(report.anomalies.count) anomaly(ies):", "33") +
                          " one version observed with different own fields; the first learned is kept.")
                    for twin in report.anomalies {
                        let fields = twin.differences.map(\.path).joined(separator: ", ")
                        print("  - \(twin.objectType.rawValue) \(twin.objectID) v\(twin.version): kept seq \(twin.keptSequence), " +
                              "seq \(twin.otherSequence) differs in \(fields.isEmpty ? "its bytes" : fields)")
                    }
                }
                if !report.unconfirmedClaims.isEmpty {
                    print(Terminal.colour("\(report.unconfirmedClaims.count) version(s) Square never confirmed:", "33") +
                          " an accepted write (an app's report, or an edit) named them, and no sync since showed them.")
                    for claim in report.unconfirmedClaims.prefix(20) { print("  - \(claim.line)") }
                }
            }
            if !report.ok { throw ExitCode(CLIError.Kind.corruptData.rawValue) }
        }
    }
}
