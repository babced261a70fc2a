import ArgumentParser
import CatalogIngest
import CatalogModel
import SquareAPI

/// `catledger check-replay`: the ledger's replay at T compared with Square's own catalog at the
/// version in force at T.
struct CheckReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-replay",
        abstract: "Compare the ledger's catalog at a Square time with Square's own answer for that moment.",
        discussion: """
        Square keeps past states of a catalog: list and batch-retrieve take a catalog_version, and catalog
        versions are Square's clock in milliseconds. This replays the ledger to --at (as `show --at` and
        `replay` do, nested variations and modifiers rebuilt from their own facts) and compares it object by
        object, nested arrays included, with Square's answer for the version in force at that time. It prints
        the matches, every mismatch with its field differences, objects the ledger never saw and objects only
        the ledger has. Exits 0 when everything matches and 1 otherwise.

        Examples:
          catledger check-replay --at "2026-10-15 12:00" --sample 50 \\
              --square-base-url http://127.0.0.1:8081
          catledger check-replay --at 2026-10-05 --as-known-at 2026-10-06 --json
        """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var square: SquareOptions

    @Option(help: "Square time: the catalog as it was then.")
    var at: String

    @Option(help: "Ledger time: replay only what the ledger had recorded by then.")
    var asKnownAt: String?

    @Option(help: "Compare only this many of the ledger's objects, chosen at random (batch-retrieve).")
    var sample: Int?

    @Option(help: "The seed of the sample's choice.")
    var seed: UInt64 = 1

    func validate() throws {
        if let sample, sample < 1 { throw ValidationError("--sample must be at least 1") }
    }

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let point = try global.asOf(at: at, asKnownAt: asKnownAt)
            let logger = try global.logger("catledger.check-replay")
            let client = SquareCatalogClient(configuration: try square.configuration(), logger: logger)
            let reader = try LedgerAccess(options: global).reader()
            let report: ReplayCheckReport
            do {
                report = try await ReplayCheck.run(reader: reader, client: client, at: point.squareTimeMax!,
                                                   asKnownAt: point.ledgerTimeMax, sample: sample, seed: seed)
            } catch let error as SquareAPIError {
                throw CLIError(.squareError, "Square did not answer: \(error.message) at \(error.location)")
            }
            if global.json {
                try printJSON(report)
            } else {
                print("Catalog at \(report.at) (catalog_version \(report.catalogVersion))" +
                      (report.asKnownAt.map { " as known at \($0)" } ?? "") + (report.sampled ? ", sampled" : "") + ":")
                print("  \(report.compared) object(s) compared, \(report.matches) match(es), " +
                      "\(report.mismatches.count) mismatch(es), \(report.neverSeen.count) never seen by the ledger, " +
                      "\(report.ledgerOnly.count) only in the ledger")
                for mismatch in report.mismatches {
                    print(Terminal.colour("  MISMATCH", "31") + " \(mismatch.type) \(mismatch.id): ledger v\(mismatch.ledgerVersion), " +
                          "Square v\(mismatch.squareVersion.map(String.init) ?? "?")")
                    for change in mismatch.differences {
                        print("    \(change.path): ledger \(change.shownBefore ?? "(absent)"), Square \(change.shownAfter ?? "(absent)")")
                    }
                }
                for object in report.neverSeen { print("  NEVER SEEN \(object.type) \(object.id) v\(object.version.map(String.init) ?? "?")") }
                for object in report.ledgerOnly { print("  ONLY IN LEDGER \(object.type) \(object.id) v\(object.version.map(String.init) ?? "?")") }
                if report.ok { print(Terminal.colour("OK", "32") + ": the replay matches Square.") }
            }
            if !report.ok { throw ExitCode(1) }
        }
    }
}
