import ArgumentParser
import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import SquareAPI

/// Where Square is and how to authenticate, shared by `sync`, `edit` and `serve`.
struct SquareOptions: ParsableArguments {
    @Option(name: .customLong("square-base-url"),
            help: "Square's base URL (default: $SQUARE_BASE_URL, else https://connect.squareup.com; the simulator: http://127.0.0.1:8081).")
    var baseURL: String?

    @Option(name: .customLong("square-token-env"), help: "The environment variable holding the access token.")
    var tokenEnvironmentVariable = "SQUARE_ACCESS_TOKEN"

    @Option(name: .customLong("square-token-file"),
            help: "A file holding the access token instead (mode 0600: a file others can read is refused).")
    var tokenFile: String?

    func configuration() throws -> SquareClientConfiguration {
        let environment = ProcessInfo.processInfo.environment
        let base = baseURL ?? environment["SQUARE_BASE_URL"] ?? SquareEnvironment.production.baseURL
        let fromFile = try tokenFile.map { try SecretFile.read($0, what: "Square access token") }
        guard let token = fromFile ?? environment[tokenEnvironmentVariable]?.trimmingCharacters(in: .whitespacesAndNewlines),
              !token.isEmpty else {
            throw CLIError(.usage, "no Square access token in $\(tokenEnvironmentVariable)",
                           hint: "export \(tokenEnvironmentVariable)=… (any token works against `catledger simulator`)")
        }
        guard base.hasPrefix("http://") || base.hasPrefix("https://") else {
            throw CLIError(.usage, "the Square base URL must start with http:// or https://, not \"\(base)\"")
        }
        return SquareClientConfiguration(environment: .custom(baseURL: base), accessToken: SquareAccessToken(token))
    }
}

/// `catledger sync`: one incremental (or full) sync of the catalog into the ledger.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Fetch catalog changes from Square into the ledger (incremental from the stored watermark, or --full).",
        discussion: """
        An incremental sync searches from the latest_time stored by the last completed sync (begin_time is
        exclusive). The watermark moves only when every page is in the ledger, so an interrupted sync is
        simply run again: versions already recorded are recognised and not stored twice.

        Examples:
          catledger sync --merchant ML8CAFE0SIM01 --square-base-url \\
              http://127.0.0.1:8081
          catledger sync --full --merchant ML8CAFE0SIM01 --square-token-file \\
              square.token
        """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var square: SquareOptions

    @Flag(help: "Fetch every object of every type, deleted ones included.")
    var full = false

    @OptionGroup var merchant: MerchantOption

    @Option(help: "Objects per search page (1...1000).")
    var pageLimit = 1000

    func validate() throws {
        guard (1...1000).contains(pageLimit) else { throw ValidationError("--page-limit must be 1...1000") }
    }

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let logger = try global.logger("catledger.sync")
            let client = SquareCatalogClient(configuration: try square.configuration(), logger: logger)
            let merchantID = try merchant.merchantID()
            let ledger = try LedgerAccess(options: global).existingWriter()
            let report: SyncReport
            do {
                // Square does not say how many pages a sync has: the bar counts durable appends and their rate.
                let bar = SharedProgressBar(ProgressBar("syncing", total: nil,
                                                        enabled: !global.json && Terminal.standardErrorIsTerminal))
                let syncer = CatalogSyncer(ledger: ledger, client: client, merchantID: merchantID,
                                           pageLimit: pageLimit, logger: logger, afterAppend: { bar.advance() })
                report = full ? try await syncer.syncFull() : try await syncer.syncIncremental()
                bar.finish()
            } catch let error as SquareAPIError {
                try? await ledger.close()
                throw CLIError(.squareError, "the sync stopped: \(error.message) at \(error.location)",
                               hint: "run it again: what was recorded stays, and the watermark did not move")
            } catch {
                try? await ledger.close()
                throw error
            }
            try await ledger.close()
            if global.json { try printJSON(report); return }
            print("\(report.mode.capitalized) sync \(report.runID): \(report.pages) page(s), \(report.objectsReceived) object(s), " +
                  "\(report.eventsAppended) new event(s), \(report.duplicates) already known. Watermark \(report.latestTime ?? "none").")
        }
    }
}

/// The seller whose catalog a command writes about: `--merchant`, else `$SQUARE_MERCHANT_ID`. There is
/// no default: events recorded under a made-up merchant would be another seller's history.
struct MerchantOption: ParsableArguments {
    @Option(help: "The Square merchant (seller) id recorded on the events (default: $SQUARE_MERCHANT_ID).")
    var merchant: String?

    func merchantID() throws -> MerchantID {
        let value = merchant ?? ProcessInfo.processInfo.environment["SQUARE_MERCHANT_ID"]
        guard let value, !value.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw CLIError(.usage, "no merchant: this command records events for one Square seller",
                           hint: "pass --merchant ID (the seller's merchant id, e.g. ML8CAFE0SIM01) or set SQUARE_MERCHANT_ID")
        }
        try MerchantCommand.validate(value)
        return MerchantID(value)
    }
}
