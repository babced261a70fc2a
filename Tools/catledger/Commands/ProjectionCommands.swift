import ArgumentParser
import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import LedgerQueries
import LedgerStorage

extension LedgerAccess {
    /// The projection database of the ledger, brought up to the durable end of the log first. With
    /// `--db FILE` the commands read that file instead (e.g. one written by `catledger replay`).
    func projection(db: String?, progressLabel: String = "projecting") throws -> ProjectionQueries {
        if let db {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: db, isDirectory: &isDirectory), !isDirectory.boolValue else {
                throw CLIError(.notFound, "no projection database at \(db)", hint: "write one with `catledger replay --at T --out \(db)`")
            }
            guard FileManager.default.isReadableFile(atPath: db) else {
                throw CLIError(.failure, "cannot read \(db)", hint: "check the file's permissions")
            }
            // Read-only: a file that is not a projection is refused, and nothing is created or changed.
            do {
                let queries = try ProjectionQueries.open(path: db)
                _ = try queries.projectionPoint()
                _ = try queries.checkpoint()
                return queries
            } catch {
                throw CLIError(.corruptData, "\(db) is not a projection database",
                               hint: "give a file written by `catledger replay --at T --out FILE`, or the ledger's own "
                                   + "\(layout.projectionsDatabase.string)")
            }
        }
        let projector = try CatalogProjector(databasePath: layout.projectionsDatabase.string, reader: try reader(),
                                             logger: try options.logger("catledger.projections"))
        let bar = ProgressBar(progressLabel, total: nil, enabled: !options.json && Terminal.standardErrorIsTerminal)
        _ = try projector.catchUp { progress in bar.advance(by: Int(progress.processed) - bar.done) }
        if bar.done > 0 { bar.finish() }
        return try ProjectionQueries.open(path: layout.projectionsDatabase.string)
    }
}

extension LedgerAccess {
    /// The ledger's answers from the projection file `db` (`--db FILE`), location names from the
    /// data directory's ledger when there is one (each row's location as named at its time).
    func projectionLedger(db: String) throws -> ProjectionLedger {
        let projection = try projection(db: db)
        return try ProjectionLedger(projection, path: db, locationDirectory: try queriesIfLedger()?.locationDirectory())
    }
}

extension CLIError {
    /// What a projection file lacks for a question, with how to get the answer.
    init(_ error: ProjectionFileError) {
        self.init(.notFound, error.message, hint: error.hint)
    }
}

struct SearchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "Fuzzy, ranked search over item and variation names, SKUs, UPCs, categories and descriptions.",
        discussion: """
        Typos, partial words and accents are forgiven; an exact SKU or barcode comes first.

        Examples:
          catledger search "cofee mugg"
          catledger search PAS-021-2 --json
          catledger search latte --db past.sqlite --limit 3
        """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "What to look for, e.g. \"cofee mug\" or a scanned barcode.")
    var text: String

    @Option(help: "Only items in this category (a name or an id).")
    var category: String?

    @Option(help: "At most this many results (1-\(SearchAnswer.maximumLimit)).")
    var limit = SearchAnswer.defaultLimit

    @Option(help: "Read this projection database (e.g. a replay) instead of the ledger's own.")
    var db: String?

    func validate() throws {
        guard (1...SearchAnswer.maximumLimit).contains(limit) else {
            throw ValidationError("--limit must be between 1 and \(SearchAnswer.maximumLimit)")
        }
        guard !text.trimmingCharacters(in: .whitespaces).isEmpty else { throw ValidationError("the search text is empty") }
    }

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let access = LedgerAccess(options: global)
            let projection = try access.projection(db: db)
            let answer = try projection.searchAnswer(text, categoryID: try category.map { try projection.resolveCategory($0).id }, limit: limit)
            if db == nil { access.warnIfLastVerificationFailed() }
            if global.json { try printJSON(answer); return }
            print(SearchRendering.table(answer))
        }
    }
}

enum SearchRendering {
    static func table(_ answer: SearchAnswer) -> String {
        if answer.hits.isEmpty { return "No matches." }
        var table = TextTable(["#", "item", "variation", "sku", "matched", "score", "variation id"],
                              alignments: [.right, .left, .left, .left, .left, .right, .left])
        for hit in answer.hits {
            table.append(["\(hit.rank)", hit.itemName, hit.variationName ?? "-", hit.sku ?? "-", hit.matchedField,
                          String(format: "%.1f", hit.score), hit.objectID])
        }
        return table.render()
    }
}

struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Write the catalog as of a past moment to a database of the same schema as the live projection.",
        discussion: """
        Every read command answers from it with --db FILE (\(VerbLine.projectionCommands)), so the past can be \
        queried like the present: the file keeps the catalog at its point and every version up to it.

        Examples:
          catledger replay --at 2026-10-05 --out past.sqlite && catledger search \\
              latte --db past.sqlite
          catledger replay --at "last week" --as-known-at "last week" --out \\
              then.sqlite --json
        """)

    @OptionGroup var global: GlobalOptions

    @Option(help: "Square time: the catalog as it was then.")
    var at: String

    @Option(help: "Ledger time: only what the ledger had recorded by then.")
    var asKnownAt: String?

    @Option(help: "The SQLite file to write (replaced if it exists).")
    var out: String

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let point = try global.asOf(at: at, asKnownAt: asKnownAt)
            let reader = try LedgerAccess(options: global).reader()
            let bar = ProgressBar("replaying", total: try reader.lastSequence().map { Int($0) + 1 },
                                  enabled: !global.json && Terminal.standardErrorIsTerminal)
            let summary = try ProjectionReplay.replay(reader: reader, at: point.squareTimeMax, asKnownAt: point.ledgerTimeMax,
                                                      to: out, logger: try global.logger("catledger.replay")) { progress in
                bar.advance(by: Int(progress.processed) - bar.done)
            }
            bar.finish()
            if global.json { try printJSON(ReplayAnswer(summary)); return }
            print("Wrote the catalog as of \(try global.timeDisplay().point(point)) to \(out).")
            print("Query it like the live one, e.g. `catledger search latte --db \(out)`.")
        }
    }
}

struct RebuildCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rebuild",
        abstract: "Rebuild the projections from sequence 0 into a shadow database and swap it in atomically.",
        discussion: """
        Takes the ledger's writer lock for the whole rebuild: a running `catledger serve` reads the projection it \
        would swap, so the command refuses (lock_held, exit 6) while a server or another writer holds the ledger.

        Examples:
          catledger rebuild --data-dir ledger
        """)

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let access = LedgerAccess(options: global)
            let lock = try access.writerLock()
            defer { lock.release() }
            let projector = try CatalogProjector(databasePath: access.layout.projectionsDatabase.string, reader: try access.reader(),
                                                 logger: try global.logger("catledger.projections"))
            let bar = ProgressBar("rebuilding", total: try access.reader().lastSequence().map { Int($0) + 1 },
                                  enabled: !global.json && Terminal.standardErrorIsTerminal)
            let started = Date()
            let checkpoint = try projector.rebuild { progress in bar.advance(by: Int(progress.processed) - bar.done) }
            bar.finish()
            let seconds = Date().timeIntervalSince(started)
            if global.json {
                try printJSON(["checkpoint": checkpoint.map { Int($0) } ?? -1, "milliseconds": Int(seconds * 1000)])
                return
            }
            print("Rebuilt \(access.layout.projectionsDatabase.string) through sequence \(checkpoint.map(String.init) ?? "none") " +
                  "in \(String(format: "%.2f", seconds)) s.")
        }
    }
}
