import ArgumentParser
import CatalogModel
import CatalogProjections
import Foundation
import LedgerQueries

/// Where a listing reads the catalog: the ledger's projection (now), a replay file (`--db`), or a
/// replay made for the command (`--at`, `--as-known-at`) into a temporary file.
struct ListingSource: ParsableArguments {
    @Option(help: "Read this projection database (e.g. a replay) instead of the ledger's own.")
    var db: String?

    @Option(help: "The catalog as it was at this Square time (replays the ledger to a temporary file).")
    var at: String?

    @Option(help: "With --at: only what the ledger had recorded by this ledger time.")
    var asKnownAt: String?

    func validate() throws {
        if db != nil && (at != nil || asKnownAt != nil) { throw ValidationError("--db is a replay already: give --at or --db, not both") }
        if asKnownAt != nil && at == nil { throw ValidationError("--as-known-at goes with --at") }
    }

    /// The ledger's recorded ListLocations answers (the data directory's ledger; nil for a `--db`
    /// file without one), so a listing names locations as of its point.
    func locationDirectory(_ global: GlobalOptions) throws -> LocationDirectory? {
        let access = LedgerAccess(options: global)
        return try (db == nil ? access.queries() : access.queriesIfLedger())?.locationDirectory()
    }

    /// Runs `body` on the chosen projection.
    func read<T>(_ global: GlobalOptions, _ body: (ProjectionQueries) throws -> T) throws -> T {
        let access = LedgerAccess(options: global)
        guard let at else {
            let result = try body(try access.projection(db: db))
            if db == nil { access.warnIfLastVerificationFailed() }
            return result
        }
        let point = try global.asOf(at: at, asKnownAt: asKnownAt)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("catledger-\(UUID().uuidString).sqlite").path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file + suffix) }
        }
        _ = try ProjectionReplay.replay(reader: try access.reader(), at: point.squareTimeMax, asKnownAt: point.ledgerTimeMax,
                                        to: file, logger: try global.logger("catledger.replay")) { _ in }
        return try body(try ProjectionQueries.open(path: file))
    }
}

struct ItemsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "items",
        abstract: "List the catalog's items with their variations and prices (names, ids, money).",
        discussion: """
        Examples:
          catledger items
          catledger items --category Coffee --at 2026-10-15
          catledger items --db past.sqlite --json
        """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var source: ListingSource

    @Option(help: "Only items in this category (a name or an id).")
    var category: String?

    func run() async throws {
        try await reportingErrors(json: global.json) {
            // Locations named as of the listing's point from the ledger's recorded answers (#43 item 6).
            let directory = try source.locationDirectory(global)
            let answer = try source.read(global, { try $0.itemsAnswer(category: category, locationDirectory: directory) })
            if global.json { try printJSON(answer); return }
            var table = TextTable(["item", "variation", "sku", "price", "per location", "categories", "id"],
                                  alignments: [.left, .left, .left, .right, .left, .left, .left])
            for item in answer.items {
                let categories = item.categoryIDs.map(answer.categoryName).joined(separator: ", ")
                if item.variations.isEmpty { table.append([item.name ?? item.id, "-", "-", "-", "-", categories, item.id]) }
                for (index, variation) in item.variations.enumerated() {
                    let price = ItemsAnswer.price(variation)?.description ?? (variation.pricingType == "VARIABLE_PRICING" ? "variable" : "-")
                    let local = variation.locationOverrides
                        .map { "\(answer.names.labelledLocation($0.locationID)) \(ItemsAnswer.price($0)?.description ?? "-")" }
                        .joined(separator: ", ")
                    table.append([index == 0 ? item.name ?? item.id : "", variation.name ?? variation.id, variation.sku ?? "-", price,
                                  local.isEmpty ? "-" : local, index == 0 ? categories : "", variation.id])
                }
            }
            print("\(answer.items.count) item(s)\n\n" + table.render())
        }
    }
}

struct CategoriesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "categories",
        abstract: "List the catalog's categories with how many items each holds.",
        discussion: """
        Examples:
          catledger categories
          catledger categories --at "last month" --json
        """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var source: ListingSource

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let answer = try source.read(global) { try $0.categoriesAnswer() }
            if global.json { try printJSON(answer); return }
            var table = TextTable(["category", "items", "id"], alignments: [.left, .right, .left])
            for category in answer.categories { table.append([category.name, "\(category.items)", category.id]) }
            print("\(answer.categories.count) categor\(answer.categories.count == 1 ? "y" : "ies")\n\n" + table.render())
        }
    }
}

struct LocationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "locations",
        abstract: "List the seller's locations with their names, and how the catalog uses each.",
        discussion: """
        Names and status come from Square's ListLocations answers, which sync records (every full sync, \
        and an incremental one at most hourly); a location only the catalog names shows by its id.

        Examples:
          catledger locations
          catledger locations --json
        """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var source: ListingSource

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let directory = try source.locationDirectory(global)
            let answer = try source.read(global) { try $0.locationsAnswer(locationDirectory: directory) }
            if global.json { try printJSON(answer); return }
            var table = TextTable(["location", "id", "status", "items present", "items absent", "own prices"],
                                  alignments: [.left, .left, .left, .right, .right, .right])
            for location in answer.locations {
                table.append([location.name, location.id, location.status ?? "-", "\(location.itemsPresent)",
                              "\(location.itemsAbsent)", "\(location.priceOverrides)"])
            }
            print("\(answer.locations.count) location(s)\n\n" + table.render())
        }
    }
}
