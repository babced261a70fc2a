import ArgumentParser
import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import LedgerQueries
import SquareAPI

/// `catledger edit`: a safe local edit (fetch-before-update) recorded in the ledger.
struct EditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract: "Change an item or variation at Square (price, name or any field the app edits), safely, and record it.",
        discussion: """
        The current item and all its variations are read from Square, the change is applied, and the whole
        item is sent with every version. With --base-version the target is sent with that version instead, so
        a change based on an outdated copy is refused rather than overwriting someone else's; the refusal is
        recorded and diagnosed. Exit code 7 when Square refuses the edit.

        --changes takes a patch of any of the fields the catalog app edits, as JSON (the API's `changes`): \
        name, sku, upc, price, location_prices, category_ids, tax_ids, modifier_list_ids, \
        present_at_all_locations, present_at_location_ids, absent_at_location_ids, sold_out ({"LOCATION": true}), \
        archived. A field not among them is refused before anything is sent. --sku, --upc, --sold-out-at, \
        --in-stock-at and --archived add to it. --also makes the same change to more objects, sent as \
        batch-upserts within Square's limits (1000 objects a batch, 10000 a request); --delete deletes the \
        objects instead, 200 ids a batch-delete; each part is recorded with its own key (KEY, KEY/2, ...).

        Retrying with the same --idempotency-key is safe: an edit whose outcome the ledger holds gets that \
        outcome again (the same exit code) without a request to Square; one whose outcome is missing (Square \
        was unreachable) is sent again with the same key. A key already used for a different edit (another \
        object, change, actor or device) is refused with exit code 64 before anything is sent.

        Examples:
          catledger edit NOBY45VOG5MZYXNO26GNKVU5 --price 4.50 --merchant \\
              ML8CAFE0SIM01
          catledger edit NOBY45VOG5MZYXNO26GNKVU5 --price 4.75 --location \\
              LCAFEHARBOR02 --merchant ML8CAFE0SIM01
          catledger edit S6SQXTR5QV7U6AGTCQVV4GWP --changes '{"name":"Croissants"}' \\
              --merchant ML8CAFE0SIM01
        """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var square: SquareOptions

    @Argument(help: "The variation (for --price) or item / variation (for --name) id.")
    var id: String

    @Option(help: "New price in major units with up to two decimals, e.g. 4.50.")
    var price: String?

    @Option(help: "Currency of --price (default: the variation's).")
    var currency: String?

    @Option(help: "Set the price at this location only (a location override).")
    var location: String?

    @Option(help: "New name.")
    var name: String?

    @Option(help: "A patch of fields as JSON, e.g. '{\"sku\":\"LAT-S\",\"tax_ids\":[\"TAX1\"]}'.")
    var changes: String?

    @Option(help: "New SKU (variation).")
    var sku: String?

    @Option(help: "New UPC / GTIN (variation).")
    var upc: String?

    @Option(help: "Mark the variation sold out at this location (repeatable).")
    var soldOutAt: [String] = []

    @Option(help: "Mark the variation back in stock at this location (repeatable).")
    var inStockAt: [String] = []

    @Option(help: "Archive (true) or unarchive (false) the item.")
    var archived: Bool?

    @Option(help: "Another object to make the same change to (repeatable); sent in parts within Square's batch limits.")
    var also: [String] = []

    @Flag(help: "Delete the object (and every --also) instead: batch-deletes of at most 200 ids, each part recorded.")
    var delete = false

    @Option(help: "The version the change is based on (refused by Square if the object has moved on).")
    var baseVersion: Int64?

    @Option(help: "Who makes the edit.")
    var actor = ProcessInfo.processInfo.environment["USER"] ?? "unknown"

    @Option(help: "From which device.")
    var device = "catledger"

    @OptionGroup var merchant: MerchantOption

    @Option(help: "Idempotency key (reuse it to retry the same edit safely).")
    var idempotencyKey: String?

    func validate() throws {
        let patch = try patch()
        if delete {
            guard price == nil, name == nil, patch == nil else {
                throw ValidationError("--delete changes nothing else: leave out --price, --name and the fields")
            }
            return
        }
        guard price != nil || name != nil || patch != nil else {
            throw ValidationError("give --price, --name, --changes or another field to change, or --delete")
        }
        if let price, Self.minorUnits(price) == nil {
            throw ValidationError("--price must be a non-negative amount with up to two decimals, e.g. 4.50")
        }
    }

    /// The patch of --changes with the field options added; nil when none is given.
    func patch() throws -> EditChanges? {
        var patch = EditChanges()
        if let changes {
            do {
                patch = try JSONDecoder().decode(EditChanges.self, from: Data(changes.utf8))
            } catch let DecodingError.dataCorrupted(context) {
                throw ValidationError("--changes: \(context.debugDescription)")
            } catch {
                throw ValidationError("--changes must be a JSON object of fields: \(error)")
            }
        }
        if let sku { patch.sku = sku }
        if let upc { patch.upc = upc }
        if let archived { patch.archived = archived }
        for location in soldOutAt { patch.soldOut = (patch.soldOut ?? [:]).merging([location: true]) { $1 } }
        for location in inStockAt { patch.soldOut = (patch.soldOut ?? [:]).merging([location: false]) { $1 } }
        return patch.isEmpty ? nil : patch
    }

    /// "4.5" -> 450, "4.50" -> 450, "4" -> 400.
    static func minorUnits(_ text: String) -> Int64? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = Int64(parts[0]), whole >= 0, !parts[0].hasPrefix("-") else { return nil }
        var cents: Int64 = 0
        if parts.count == 2 {
            let fraction = parts[1]
            guard (1...2).contains(fraction.count), fraction.allSatisfy(\.isNumber), let value = Int64(fraction) else { return nil }
            cents = fraction.count == 1 ? value * 10 : value
        }
        let (product, overflow) = whole.multipliedReportingOverflow(by: 100)
        return overflow ? nil : product + cents
    }

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let logger = try global.logger("catledger.edit")
            let client = SquareCatalogClient(configuration: try square.configuration(), logger: logger)
            var request = EditRequest(
                objectID: id, price: price.flatMap(Self.minorUnits).map { .init(amount: $0, currency: currency, locationID: location) },
                name: name, actor: actor, device: device, baseVersion: baseVersion, idempotencyKey: idempotencyKey,
                changes: try patch())
            request.objectIDs = also
            request.delete = delete
            let merchantID = try merchant.merchantID()
            let ledger = try LedgerAccess(options: global).existingWriter()
            let result: EditResult
            do {
                result = try await SafeEditor(ledger: ledger, client: client, merchantID: merchantID, logger: logger)
                    .edit(request)
            } catch let error as EditError {
                try? await ledger.close()
                let kind: CLIError.Kind = switch error.code {
                case .notFound: .notFound
                case .invalidRequest, .idempotencyKeyReused: .usage
                case .squareUnavailable: .squareError
                }
                let hint: String? = switch error.code {
                case .squareUnavailable: "the proposal is recorded; retry with the same --idempotency-key to complete it safely"
                case .idempotencyKeyReused: "retry an edit with the same options, or give a new edit a new --idempotency-key"
                default: nil
                }
                throw CLIError(kind, error.message, hint: hint)
            } catch {
                try? await ledger.close()
                throw error
            }
            try await ledger.close()
            if global.json {
                try printJSON(result)
            } else if result.status == .accepted {
                let versions = result.newVersions.sorted { $0.key < $1.key }.map { "\($0.key) v\($0.value)" }
                print("Accepted (seq \(result.outcomeSequence)): \(versions.joined(separator: ", "))")
                if result.replayed { print("This retry was answered from the ledger; nothing was sent to Square.") }
            } else {
                print("Square refused the edit: HTTP \(result.httpStatus) \(result.errorCodes.joined(separator: ","))" +
                      " (recorded at seq \(result.outcomeSequence))")
                if result.replayed { print("This retry was answered from the ledger; nothing was sent to Square.") }
                if let diagnosis = result.diagnosis { print("\n" + diagnosis.text(try global.timeDisplay())) }
            }
            if result.status == .rejected { throw ExitCode(CLIError.Kind.squareError.rawValue) }
        }
    }
}
