import ArgumentParser
import CatalogLedger
import CatalogModel
import CatalogProjections
import LedgerPages
import LedgerQueries
import SquareWire
import Foundation

struct PricesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prices",
        abstract: "Price history of a variation, an item's variations, a SKU, or the whole catalog (--all): base and per-location prices and pricing type.",
        discussion: """
        Examples:
          catledger prices CDACBVH7G3LMUXI6US6IH3I5 --chart
          catledger prices --all --since "last week" --format csv > repriced.csv
          catledger prices --all --since 2026-11-01 --until 2026-11-08
          catledger prices --all --since "last month" --category Coffee --location \\
              LCAFEHARBOR02
          catledger prices CDACBVH7G3LMUXI6US6IH3I5 --db past.sqlite
        """)

    enum Format: String, ExpressibleByArgument, CaseIterable { case table, json, csv }

    @OptionGroup var global: GlobalOptions

    @Argument(help: "A variation (or modifier) id.")
    var id: String?

    @Option(help: "Every variation that ever carried this SKU.")
    var sku: String?

    @Option(help: "Every variation of this item (a name or an id).")
    var item: String?

    @Flag(help: "Every price change of the whole catalog (with --since/--until: those in the window), with names.")
    var all = false

    @Option(help: "Read this projection database (e.g. a replay: the changes up to its point) instead of the ledger.")
    var db: String?

    @Option(help: "With --all: only the changes of items in this category when they changed (a name or an id).")
    var category: String?

    @Option(help: "With --all: only this location's own prices (a name or an id, see `catledger locations`).")
    var location: String?

    @Option(help: "Only changes at or after this Square time.")
    var since: String?

    @Option(help: "Only changes at or before this Square time.")
    var until: String?

    @Option(help: "table, json or csv.")
    var format: Format?

    @Flag(help: "Draw the price over time in the terminal.")
    var chart = false

    @Option(help: "Also write the chart as an SVG file.")
    var svg: String?

    func validate() throws {
        let given = [id, sku, item].compactMap { $0 }.count + (all ? 1 : 0)
        guard given == 1 else { throw ValidationError("name exactly one of ID, --sku, --item or --all") }
        if all && (chart || svg != nil) { throw ValidationError("--chart and --svg draw one subject: name an ID, --sku or --item") }
        if (category != nil || location != nil) && !all { throw ValidationError("--category and --location go with --all") }
    }

    func run() async throws {
        try await reportingErrors(json: global.json) {
            if all { try catalogWide(); return }
            let access = LedgerAccess(options: global)
            // --item is an id or a name (deleted items too): one item, else exit 3 with the candidates.
            let item = try self.item.map { try access.projection(db: db).resolveItem($0) }
            let subject: PriceSubject = if let sku { .sku(sku) } else if let item { .item(CatalogObjectID(item.id)) } else { .object(CatalogObjectID(id!)) }
            let (since, until) = try global.window(since: since, until: until)
            let found = if let db { try access.projectionLedger(db: db).prices(subject, sinceNanos: since, untilNanos: until) }
                else { try access.queries().prices(subject, sinceNanos: since, untilNanos: until) }
            guard let answer = found else {
                throw CLIError(.notFound, "no price history for \(subject.description)\(db.map { " in \($0)" } ?? "")",
                               hint: "check the id with `catledger search`, or use --item for an item and --sku for a SKU")
            }
            let changes = answer.changes
            let time = try global.timeDisplay()
            switch format ?? (global.json ? .json : .table) {
            case .json: try printJSON(answer)
            case .csv: print(PriceRendering.csv(answer, time: time), terminator: "")
            case .table:
                print("Price history of \(answer.subjectTitle): \(changes.count) change(s)\n\n" + PriceRendering.table(answer, time: time))
            }
            // Names beside ids in the chart's title and legend (the answer's names).
            let names = answer.names
            if chart {
                print("\n" + PriceChart.terminal(changes, width: 64, height: 12, name: { names.name(of: $0) },
                                                 locationName: { names.location($0.rawValue) }))
            }
            if let svg {
                try PriceChart.svg(changes, title: "Price history of \(answer.subjectTitle)", name: { names.name(of: $0) },
                                   locationName: { names.location($0.rawValue) })
                    .write(toFile: svg, atomically: true, encoding: .utf8)
                if !global.json { print("Wrote \(svg)") }
            }
        }
    }
}

extension PricesCommand {
    /// `--all`: the catalog's price changes in the window, from the projection's price_history.
    func catalogWide() throws {
        let access = LedgerAccess(options: global)
        let (since, until) = try global.window(since: self.since, until: self.until)
        // Each row's location as named at its time: the ledger's recorded ListLocations answers
        // (the data directory's ledger, also for a replay file read with --db, when there is one).
        let directory = try (db == nil ? access.queries() : access.queriesIfLedger())?.locationDirectory()
        // A category or location is an id or a name (a former one too); one that names nothing, or
        // several, is an error (exit 3), never an empty answer.
        let projection = try access.projection(db: db)
        let category = try self.category.map { try projection.resolveCategory($0) }
        let location = try self.location.map { try projection.resolveLocation($0, directory: directory) }
        let answer = try projection.catalogPrices(sinceNanos: since, untilNanos: until, category: category,
                                                  location: location, locationDirectory: directory)
        if db == nil { access.warnIfLastVerificationFailed() }
        let time = try global.timeDisplay()
        switch format ?? (global.json ? .json : .table) {
        case .json: try printJSON(answer)
        case .csv: print(PriceRendering.csv(answer, time: time), terminator: "")
        case .table:
            let scope = [category.map { "in \($0.echo) at the time of each change" }, location.map { "at \($0.echo)" }].compactMap { $0 }
            print("\(answer.changes.count) price change(s) in the catalog\(scope.isEmpty ? "" : ", " + scope.joined(separator: ", "))\n\n"
                + PriceRendering.table(answer, time: time))
        }
    }
}

enum PriceRendering {
    static func table(_ answer: CatalogPricesAnswer, time: TimeDisplay) -> String {
        var table = TextTable(["square time", "name", "scope", "before", "after", "source", "id"],
                              alignments: [.left, .left, .left, .right, .right, .left, .left])
        for row in answer.changes {
            let change = row.change
            let scope = CatalogPricesAnswer.scope(change)
            let location = answer.location(of: row).map { $0.name == $0.id ? $0.id : "\($0.name) [\($0.id)]" }
            table.append([squareTime(change.updatedAt, time), CatalogPricesAnswer.name(row),
                          location.map { "price at " + $0 } ?? (scope.scope == "base_price" ? "price" : "pricing type"),
                          change.shownOld ?? "-", change.shownNew ?? "-", change.source, change.objectID])
        }
        return table.render()
    }

    static func squareTime(_ text: String, _ time: TimeDisplay) -> String {
        RFC3339.nanoseconds(text).map(time.square) ?? text
    }

    static func csv(_ answer: CatalogPricesAnswer, time: TimeDisplay) -> String {
        var lines = ["square_time,ledger_time,item_id,item,object_id,name,sku,scope,location_id,location_name,before_amount,after_amount,currency,before,after,version,sequence,source"]
        for row in answer.changes {
            let change = row.change
            let scope = CatalogPricesAnswer.scope(change)
            lines.append([squareTime(change.updatedAt, time), time.ledger(change.recordedAt), row.itemID, row.itemName,
                          change.objectID, CatalogPricesAnswer.name(row), change.sku, scope.scope, scope.locationID,
                          answer.location(of: row)?.name,
                          change.oldAmount.map { "\($0)" }, change.newAmount.map { "\($0)" }, change.currency,
                          change.shownOld, change.shownNew, "\(change.version)", "\(change.sequence)",
                          EventSource.named(change.source)?.word ?? change.source]
                .map(csvField).joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func csvField(_ text: String?) -> String {
        text.map(CSV.field) ?? ""
    }

    static func table(_ answer: PricesAnswer, time: TimeDisplay) -> String {
        var table = TextTable(["square time", "ledger time", "name", "scope", "before", "after", "v", "source", "id"],
                              alignments: [.left, .left, .left, .left, .right, .right, .right, .left, .left])
        for change in answer.changes {
            table.append([time.square(change.updatedAtNanos), time.ledger(change.firstRecordedAt),
                          answer.names.display(change.objectID), scopeText(change, answer.names),
                          change.shownBefore ?? "-", change.shownAfter ?? "-", "\(change.version)",
                          change.source.description, change.objectID.rawValue])
        }
        return table.render()
    }

    static func scopeText(_ change: PriceChange, _ names: CatalogNames) -> String {
        switch change.scope.kind {
        case .basePrice: "price"
        case .pricingType: "pricing type"
        case .locationPrice:
            "price at " + (change.scope.locationID.map { "\(names.location($0.rawValue, at: change.moment)) [\($0.rawValue)]" } ?? "?")
        }
    }

    static func csv(_ answer: PricesAnswer, time: TimeDisplay) -> String {
        let field = csvField
        var lines = ["square_time,ledger_time,object_id,name,sku,scope,location_id,location_name,before_amount,after_amount,currency,before,after,version,sequence,source"]
        for change in answer.changes {
            let json = PriceChangeJSON(change, names: answer.names)
            let currency = change.afterMoney?.currency ?? change.beforeMoney?.currency
            lines.append([time.square(change.updatedAtNanos), time.ledger(change.firstRecordedAt), json.objectID, json.name,
                          change.sku, json.scope, json.locationID, json.locationName, change.beforeMoney.map { "\($0.amount)" },
                          change.afterMoney.map { "\($0.amount)" }, currency, change.shownBefore, change.shownAfter,
                          "\(change.version)", "\(change.firstSequence)", json.source]
                .map(field).joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
