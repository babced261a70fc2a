import ArgumentParser
import CatalogLedger
import CatalogModel
import CatalogProjections
import LedgerPages
import LedgerQueries
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
        """)

    enum Format: String, ExpressibleByArgument, CaseIterable { case table, json, csv }

    @OptionGroup var global: GlobalOptions

    @Argument(help: "A variation (or modifier) id.")
    var id: String?

    @Option(help: "Every variation that ever carried this SKU.")
    var sku: String?

    @Option(help: "Every variation of this item.")
    var item: String?

    @Flag(help: "Every price change of the whole catalog (with --since/--until: those in the window), with names.")
    var all = false

    @Option(help: "With --all: read this projection database (e.g. a replay) instead of the ledger's own.")
    var db: String?

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
        if db != nil && !all { throw ValidationError("--db reads a projection: use it with --all") }
    }

    func run() async throws {
        try await reportingErrors(json: global.json) {
            if all { try catalogWide(); return }
            let history = try LedgerAccess(options: global).queries()
            var changes: [PriceChange]
            let subject: String
            if let sku {
                changes = try history.priceHistory(ofSKU: sku)
                subject = "SKU \(sku)"
            } else if let item {
                changes = try history.priceHistory(ofItem: CatalogObjectID(item))
                subject = "item \(item)"
            } else {
                changes = try history.priceHistory(of: CatalogObjectID(id!))
                subject = id!
            }
            let known = try sku != nil ? !changes.isEmpty : history.isKnown(CatalogObjectID(item ?? id!))
            guard known else {
                throw CLIError(.notFound, "no price history for \(subject)",
                               hint: "check the id with `catledger search`, or use --item for an item and --sku for a SKU")
            }
            let since = try self.since.map(global.time)
            let until = try self.until.map(global.time)
            changes = changes.filter { change in
                (since.map { change.updatedAtNanos >= $0 } ?? true) && (until.map { change.updatedAtNanos <= $0 } ?? true)
            }
            let zone = try global.timeZone()
            switch format ?? (global.json ? .json : .table) {
            case .json: try printJSON(changes)
            case .csv: print(PriceRendering.csv(changes, zone: zone), terminator: "")
            case .table: print("Price history of \(subject): \(changes.count) change(s)\n\n" + PriceRendering.table(changes, zone: zone))
            }
            if chart || svg != nil {
                // Names beside ids in the chart: the title and the legend (`LedgerQueries.names`).
                let names = try history.names(of: changes.map(\.objectID) + ((item ?? id).map { [CatalogObjectID($0)] } ?? []))
                let title = "Price history of " + ((item ?? id).flatMap { names.name(of: CatalogObjectID($0)) }.map { "\($0) (\(subject))" } ?? subject)
                if chart {
                    print("\n" + PriceChart.terminal(changes, width: 64, height: 12, name: { names.name(of: $0) },
                                                     locationName: { names.location($0.rawValue) }))
                }
                if let svg {
                    try PriceChart.svg(changes, title: title, name: { names.name(of: $0) }, locationName: { names.location($0.rawValue) })
                        .write(toFile: svg, atomically: true, encoding: .utf8)
                    if !global.json { print("Wrote \(svg)") }
                }
            }
        }
    }
}

extension PricesCommand {
    /// `--all`: the catalog's price changes in the window, from the projection's price_history.
    func catalogWide() throws {
        let access = LedgerAccess(options: global)
        let since = try self.since.map(global.time)
        let until = try self.until.map(global.time)
        let changes = try access.projection(db: db).catalogPriceChanges(sinceNanos: since, untilNanos: until)
        if db == nil { access.warnIfLastVerificationFailed() }
        let zone = try global.timeZone()
        switch format ?? (global.json ? .json : .table) {
        case .json: try printJSON(changes)
        case .csv: print(PriceRendering.csv(changes, zone: zone), terminator: "")
        case .table:
            print("\(changes.count) price change(s) in the catalog\n\n" + PriceRendering.table(changes, zone: zone))
        }
    }
}

enum PriceRendering {
    static func table(_ changes: [CatalogPriceChange], zone: TimeZone) -> String {
        var table = TextTable(["square time", "item", "variation", "scope", "before", "after", "source", "variation id"],
                              alignments: [.left, .left, .left, .left, .right, .right, .left, .left])
        for row in changes {
            let change = row.change
            table.append([change.updatedAt, row.itemName ?? "-", row.objectName ?? "-", change.scope,
                          change.shownOld ?? "-", change.shownNew ?? "-", change.source, change.objectID])
        }
        return table.render()
    }

    static func csv(_ changes: [CatalogPriceChange], zone: TimeZone) -> String {
        var lines = ["square_time,ledger_time,item_id,item,object_id,variation,sku,scope,before_amount,after_amount,currency,before,after,version,sequence,source"]
        for row in changes {
            let change = row.change
            lines.append([change.updatedAt, formatTime(change.recordedAt, in: zone), row.itemID, row.itemName, change.objectID,
                          row.objectName, change.sku, change.scope, change.oldAmount.map { "\($0)" },
                          change.newAmount.map { "\($0)" }, change.currency,
                          change.shownOld, change.shownNew,
                          "\(change.version)", "\(change.sequence)", change.source]
                .map(csvField).joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func csvField(_ text: String?) -> String {
        guard let text else { return "" }
        return text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" })
            ? "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : text
    }

    static func table(_ changes: [PriceChange], zone: TimeZone) -> String {
        var table = TextTable(["square time", "ledger time", "object", "scope", "before", "after", "v", "source"],
                              alignments: [.left, .left, .left, .left, .right, .right, .right, .left])
        for change in changes {
            table.append([change.updatedAt, formatTime(change.firstRecordedAt, in: zone), change.objectID.rawValue,
                          change.scope.description, change.shownBefore ?? "-", change.shownAfter ?? "-", "\(change.version)",
                          change.source.description])
        }
        return table.render()
    }

    static func csv(_ changes: [PriceChange], zone: TimeZone) -> String {
        let field = csvField
        var lines = ["square_time,ledger_time,object_id,sku,scope,before_amount,after_amount,currency,before,after,version,sequence,source"]
        for change in changes {
            let currency = change.afterMoney?.currency ?? change.beforeMoney?.currency
            lines.append([change.updatedAt, formatTime(change.firstRecordedAt, in: zone), change.objectID.rawValue, change.sku,
                          change.scope.description, change.beforeMoney.map { "\($0.amount)" },
                          change.afterMoney.map { "\($0.amount)" }, currency, change.shownBefore, change.shownAfter,
                          "\(change.version)", "\(change.firstSequence)", change.source.description]
                .map(field).joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
