import ArgumentParser
import CatalogIngest
import CatalogLedger
import CatalogModel
import LedgerStorage

struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import recordings (JSON Lines of Square responses, webhook deliveries and edits) into the ledger.",
        discussion: """
        Every line is checked before anything is written. Re-importing a file appends nothing new.

        Examples:
          catledger import data-samples/cafe/cafe-history.jsonl --data-dir ledger
          catledger import day1.jsonl day2.jsonl --merchant ML8CAFE0SIM01 --durable
        """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "Recording files (.jsonl).")
    var files: [String]

    @Option(help: "Merchant id for lines that do not name one.")
    var merchant = "UNKNOWN_MERCHANT"

    @Flag(help: "Sync each batch to disk (slower; the default syncs once at the end, as a bulk import).")
    var durable = false

    func run() async throws {
        try await reportingErrors(json: global.json) {
            var options = LedgerOptions()
            options.storage.durability = durable ? .always : .none
            let ledger = try LedgerAccess(options: global).writer(options: options)
            var bar: ProgressBar?
            let report: ImportReport
            do {
                report = try await RecordingImporter(ledger: ledger, defaultMerchant: MerchantID(merchant))
                    .importFiles(files) { done, total in
                        if bar == nil {
                            bar = ProgressBar("importing", total: total, enabled: !global.json && Terminal.standardErrorIsTerminal)
                        }
                        bar?.advance(by: done - (bar?.done ?? 0))
                    }
                bar?.finish()
                _ = try ledger.writeSnapshot()
            } catch let error as IngestError {
                try? await ledger.close()
                throw CLIError(.usage, "cannot import: \(error)", hint: "fix the line named and run the import again; nothing was written")
            } catch {
                try? await ledger.close()
                throw error
            }
            try await ledger.close()
            if global.json { try printJSON(report); return }
            print("Imported \(report.exchanges) exchanges from \(report.files) file(s): \(report.eventsAppended) new events, " +
                  "\(report.duplicates) already in the ledger.")
        }
    }
}
