import ArgumentParser
import CatalogLedger
import CatalogModel
import LedgerQueries
import Foundation

struct PricesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prices",
        abstract: "Price history of a variation, an item's variations, or a SKU: base and per-location prices and pricing type.")

    enum Format: String, ExpressibleByArgument, CaseIterable { case table, json, csv }

    @OptionGroup var global: GlobalOptions

    @Argument(help: "A variation (or modifier) id.")
    var id: String?

    @Option(help: "Every variation that ever carried this SKU.")
    var sku: String?

    @Option(help: "Every variation of this item.")
    var item: String?

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
        let given = [id, sku, item].compactMap { $0 }.count
        guard given == 1 else { throw ValidationError("name exactly one of ID, --sku or --item") }
    }

    func run() async throws {
        try await reportingErrors(json: global.json) {
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
            if chart { print("\n" + PriceChart.terminal(changes, width: 64, height: 12)) }
            if let svg {
                try PriceChart.svg(changes, title: "Price history of \(subject)")
                    .write(toFile: svg, atomically: true, encoding: .utf8)
                if !global.json { print("Wrote \(svg)") }
            }
        }
    }
}

enum PriceRendering {
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
        func field(_ text: String?) -> String {
            guard let text else { return "" }
            return text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" })
                ? "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : text
        }
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
