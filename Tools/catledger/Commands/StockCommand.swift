import ArgumentParser
import CatalogModel
import LedgerQueries

/// `catledger stock ID`: the inventory history of a variation (or of every variation of an item).
struct StockCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stock",
        abstract: "The stock of a variation or an item over time: Square's inventory counts and the sold-out flips beside them.",
        discussion: """
        Counts come from the inventory.count.updated webhooks the ledger recorded (per location and state, the \
        quantity exactly as Square wrote it); sold-out flips are the variation's location overrides changing \
        sold_out in the catalog history. Both are listed in Square's time, so a count that reached 0 stands next \
        to the flip it explains.

        Examples:
          catledger stock CDACBVH7G3LMUXI6US6IH3I5
          catledger stock PSQ7LNM54BXSYRVYWWQVRFVK --json   # an item: its variations
        """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "A variation id, or an item id for all its variations.")
    var id: String

    func run() async throws {
        try await reportingErrors(json: global.json) {
            guard let answer = try LedgerAccess(options: global).queries().stock(of: CatalogObjectID(id)) else {
                throw CLIError(.notFound, "no object \(id) in the ledger", hint: "search for it with `catledger search TEXT`")
            }
            if global.json { try printJSON(answer); return }
            let time = try global.timeDisplay()
            print("Stock of \(answer.names.labelled(answer.subject)): \(answer.rows.count) row(s)")
            guard !answer.rows.isEmpty else {
                print("\nNo inventory counts recorded (Square sends inventory.count.updated webhooks when the seller tracks stock) and no sold-out flips.")
                return
            }
            var table = TextTable(["SQUARE TIME", "VARIATION", "LOCATION", "WHAT", "SOURCE", "SEQ"])
            for row in answer.rows {
                let what = switch row.kind {
                case .count: "\(row.quantity ?? "?") \(row.state ?? "")"
                case .soldOut: row.soldOut == true ? "marked sold out" : "back in stock (sold out cleared)"
                }
                table.append([time.square(row.at), row.name, row.locationID.map { id in row.locationName.flatMap { $0 == id ? nil : "\($0) [\(id)]" } ?? id } ?? "-", what,
                              row.source, "\(row.sequence)"])
            }
            print("\n" + table.render())
        }
    }
}
