// Random histories of the kind auditors ask about: sync runs (full and incremental, some never
// completed) that re-observe unchanged objects, price changes at the base and at a location,
// deletions, edits that Square accepts and edits it rejects with VERSION_MISMATCH. Written straight
// to the log (no append-time dedupe), so the log holds exact duplicate observations as an import
// or an old log would.

import CatalogLedger
import CatalogModel
import Foundation
import LedgerStorage
import LedgerStorageTesting
import SquareWire

struct AuditHistoryGenerator {
    static let merchant: MerchantID = "M1"
    static let location = "L1"

    struct Item {
        var version: Int64
        var price: Int64
        var locationPrice: Int64?
        var deleted = false
    }

    /// Events with the ledger time each is recorded at (non-decreasing).
    var events: [(event: PendingEvent, ledgerTime: Int64)] = []
    var squareTimes: [Int64] = []
    private var random: SeededGenerator
    private var items: [String: Item] = [:]
    /// What the editor's cache believes (it lags Square: the source of stale versions).
    private var editorVersions: [String: Int64] = [:]
    private var nowMilliseconds: Int64 = 1_790_000_000_000
    private var runCounter = 0
    private var editCounter = 0
    /// Edits Square rejected with VERSION_MISMATCH so far.
    private(set) var rejectedEdits = 0
    private var itemCount = 8
    /// Items local edits may target (all when nil).
    private var editableItems: Int?

    init(seed: UInt64) { random = SeededGenerator(seed: seed) }

    static func itemJSON(_ id: String, _ item: Item) -> String {
        let updatedAt = RFC3339.format(nanoseconds: item.version * 1_000_000)
        var variationData = #""item_id":"\#(id)","name":"Regular","pricing_type":"FIXED_PRICING","price_money":{"amount":\#(item.price),"currency":"USD"}"#
        if let locationPrice = item.locationPrice {
            variationData += #","location_overrides":[{"location_id":"\#(location)","price_money":{"amount":\#(locationPrice),"currency":"USD"}}]"#
        }
        let variation = #"{"type":"ITEM_VARIATION","id":"\#(id)-V","updated_at":"\#(updatedAt)","version":\#(item.version),"is_deleted":\#(item.deleted),"present_at_all_locations":true,"item_variation_data":{\#(variationData)}}"#
        return #"{"type":"ITEM","id":"\#(id)","updated_at":"\#(updatedAt)","version":\#(item.version),"is_deleted":\#(item.deleted),"present_at_all_locations":true,"item_data":{"name":"Item \#(id)","variations":[\#(variation)]}}"#
    }

    private mutating func record(_ pending: [PendingEvent]) {
        nowMilliseconds += Int64.random(in: 200...30_000, using: &random)
        for event in pending { events.append((event, nowMilliseconds * 1_000_000)) }
    }

    /// Square changes an item (another device, the dashboard): a new version, maybe a new price.
    private mutating func changeInSquare(_ id: String) {
        nowMilliseconds += Int64.random(in: 1_000...60_000, using: &random)
        var item = items[id] ?? Item(version: 0, price: 100 * Int64.random(in: 1...9, using: &random))
        item.version = nowMilliseconds
        switch Int.random(in: 0..<10, using: &random) {
        // Deleting the last live item local edits may target would leave a history that can hold
        // no rejected edit; then the change is one to something other than prices instead.
        case 0: item.deleted = item.deleted || liveEditableItems() != [id]
        case 1...4: item.price += 25 * Int64.random(in: -3...6, using: &random)
        case 5...6: item.locationPrice = item.price + 50 * Int64.random(in: 1...4, using: &random)
        default: break  // a change to something other than prices
        }
        items[id] = item
        squareTimes.append(item.version * 1_000_000)
    }

    private mutating func syncRun() throws {
        runCounter += 1
        let mode: SyncMode = Int.random(in: 0..<6, using: &random) == 0 ? .full : .incremental
        let runID = "run-\(runCounter)"
        let begin = mode == .full ? nil : RFC3339.format(nanoseconds: (nowMilliseconds - 60_000) * 1_000_000)
        record([EventBuilder.syncStartedEvent(runID: runID, mode: mode, beginTime: begin, merchantID: Self.merchant)])
        let pages = Int.random(in: 1...3, using: &random)
        var objects: UInt32 = 0
        for page in 0..<pages {
            // Re-reads mostly unchanged objects: the duplicates compaction drops.
            let ids = (0..<Int.random(in: 1...4, using: &random)).map { _ in "I\(Int.random(in: 0..<itemCount, using: &random))" }
            let known = Set(ids).sorted().compactMap { id in items[id].map { Self.itemJSON(id, $0) } }
            let body = #"{"objects":[\#(known.joined(separator: ","))]}"#
            record(try EventBuilder.syncPageEvents(body: Array(body.utf8), runID: runID, mode: mode, pageIndex: UInt32(page),
                                                   merchantID: Self.merchant))
            objects += UInt32(known.count)
            for id in ids { if let item = items[id] { editorVersions[id] = item.version } }
        }
        guard Int.random(in: 0..<7, using: &random) != 0 else { return }  // a run that failed midway
        let latest = RFC3339.format(nanoseconds: nowMilliseconds * 1_000_000)
        record([EventBuilder.syncCompletedEvent(runID: runID, mode: mode, beginTime: begin, latestTime: latest,
                                                pageCount: UInt32(pages), objectCount: objects, merchantID: Self.merchant)])
    }

    /// Items a local edit may target: not deleted, among the editable ones; in id order.
    private func liveEditableItems() -> [String] {
        items.filter { entry in
            !entry.value.deleted && editableItems.map { limit in Int(entry.key.dropFirst())! < limit } ?? true
        }.keys.sorted()
    }

    /// A local edit of `target` (of a random live item when nil), accepted when the editor's version
    /// is Square's, rejected with VERSION_MISMATCH otherwise.
    private mutating func edit(target: String? = nil) throws {
        let live = liveEditableItems()
        guard let id = target.flatMap({ live.contains($0) ? $0 : nil }) ?? (target == nil ? live.randomElement(using: &random) : nil) else {
            return
        }
        editCounter += 1
        let key = "edit-\(editCounter)"
        var proposed = items[id]!
        let base = editorVersions[id] ?? proposed.version
        proposed.version = base
        proposed.price += 10
        let request = #"{"idempotency_key":"\#(key)","object":\#(Self.itemJSON(id, proposed))}"#
        let edit = LocalEdit(actor: "alice", device: "ipad-\(editCounter % 3)", targetIDs: [CatalogObjectID(id)],
                             baseVersions: [ObjectVersion(objectID: CatalogObjectID(id), version: base)],
                             requestBody: Array(request.utf8), idempotencyKey: key)
        record([EventBuilder.localEditEvent(edit, merchantID: Self.merchant, correlationID: key)])
        if base == items[id]!.version {
            nowMilliseconds += 500
            var accepted = items[id]!
            accepted.version = nowMilliseconds
            accepted.price += 10
            items[id] = accepted
            editorVersions[id] = accepted.version
            squareTimes.append(accepted.version * 1_000_000)
            let response = #"{"catalog_object":\#(Self.itemJSON(id, accepted)),"id_mappings":[]}"#
            record(try EventBuilder.eventsFromUpsertResponse(body: Array(response.utf8), idempotencyKey: key,
                                                             merchantID: Self.merchant, correlationID: key))
        } else {
            let error = #"{"errors":[{"category":"INVALID_REQUEST_ERROR","code":"VERSION_MISMATCH","detail":"Object version does not match latest database version.","field":"version"}]}"#
            let followUp = #"{"objects":[\#(Self.itemJSON(id, items[id]!))]}"#
            record([try EventBuilder.upsertRejectedEvent(httpStatus: 400, errorBody: Array(error.utf8),
                                                          followUpBody: Array(followUp.utf8), idempotencyKey: key,
                                                          merchantID: Self.merchant, correlationID: key)])
            editorVersions[id] = items[id]!.version
            rejectedEdits += 1
        }
    }

    /// A history of `steps` steps.
    /// `itemCount` items (I0, I1, ...); local edits target only the first `editableItems` when given.
    static func generate(seed: UInt64, steps: Int, itemCount: Int = 8, editableItems: Int? = nil) throws -> AuditHistoryGenerator {
        var generator = AuditHistoryGenerator(seed: seed)
        generator.itemCount = itemCount
        generator.editableItems = editableItems
        for index in 0..<itemCount { generator.changeInSquare("I\(index)") }
        try generator.syncRun()
        for _ in 0..<steps {
            switch Int.random(in: 0..<100, using: &generator.random) {
            case 0..<40: try generator.syncRun()
            case 40..<75: generator.changeInSquare("I\(Int.random(in: 0..<itemCount, using: &generator.random))")
            default: try generator.edit()
            }
        }
        // The diagnosis properties need a rejected edit: when the random steps made none (a short
        // history may not), an item changes in Square behind the editor's back and is then edited
        // from the version the editor knew.
        var attempts = 0
        while generator.rejectedEdits == 0, attempts < 50, let id = generator.liveEditableItems().first {
            attempts += 1
            generator.changeInSquare(id)
            try generator.edit(target: id)
        }
        return generator
    }

    /// Appends the history to the log at `layout` with its ledger times, without dedupe.
    func write(to layout: LedgerLayout, storage: LogWriterOptions) async throws {
        let writer = try LogWriter.open(directory: layout.logDirectory, options: storage)
        var index = 0
        while index < events.count {
            let time = events[index].ledgerTime
            var batch: [LogRecord] = []
            while index < events.count && events[index].ledgerTime == time {
                batch.append(LogRecord(ledgerTime: time, payload: EventCodec.encode(events[index].event)))
                index += 1
            }
            _ = try await writer.append(batch)
        }
        try writer.close()
    }
}
