import Foundation
import LedgerStorageTesting
import SquareWire
import Testing
@testable import CatalogModel

/// One event of every kind, with fixed content, pinned by golden encodings in
/// `Tests/Fixtures/events/<name>.hex`. Set CATALOG_MODEL_WRITE_GOLDENS=1 to rewrite them after
/// a deliberate format change (and bump the format version).
enum GoldenEvents {
    static let variation = Array(#"{"type":"ITEM_VARIATION","id":"VAR_1","version":1741083330123,"updated_at":"2025-03-04T10:15:30.123Z","item_variation_data":{"item_id":"ITEM_1","price_money":{"amount":450,"currency":"USD"}}}"#.utf8)

    static let header = CatalogFactHeader(objectType: .itemVariation, objectID: "VAR_1", version: 1_741_083_330_123,
                                          updatedAtNanos: 1_741_083_330_123_000_000, updatedAt: "2025-03-04T10:15:30.123Z",
                                          isDeleted: false, parentID: "ITEM_1")

    static var all: [(name: String, event: PendingEvent)] {
        func event(_ source: EventSource, _ key: String, _ body: EventBody) -> PendingEvent {
            PendingEvent(merchantID: "MERCHANT_1", source: source, dedupeKey: key, correlationID: "run-42", body: body)
        }
        var tombstone = header
        tombstone.isDeleted = true
        tombstone.parentID = nil
        return [
            ("object-observed", event(.fullSync, DedupeKey.observation(id: "VAR_1", version: header.version, payload: variation),
                                      .objectObserved(ObjectObservation(header: header, payload: variation)))),
            // Header flag bit 2: the Square-Version of the call follows the payload. Events written
            // before it existed (object-observed above) stay byte for byte as they were.
            ("object-observed-square-version", event(.incrementalSync, DedupeKey.observation(id: "VAR_1", version: header.version, payload: variation),
                                                     .objectObserved(ObjectObservation(header: header, payload: variation,
                                                                                       squareVersion: "2025-10-16")))),
            ("object-deleted", event(.upsertResponse, "del:VAR_1:1741083330123",
                                     .objectDeleted(ObjectDeletion(header: tombstone, cascadedFrom: "ITEM_1")))),
            ("webhook-received", event(.webhook, "wh:evt-1",
                                       .webhookReceived(WebhookReceipt(eventID: "evt-1", eventType: "catalog.version.updated",
                                                                       headers: [HTTPHeader(name: "square-retry-number", value: "2")],
                                                                       signatureVerdict: .valid, body: Array(#"{"event_id":"evt-1"}"#.utf8))))),
            ("sync-started", event(.incrementalSync, "sync:run-42:start",
                                   .syncStarted(SyncStart(runID: "run-42", mode: .incremental, beginTime: "2025-03-04T10:00:00Z")))),
            ("sync-page-received", event(.incrementalSync, "sync:run-42:page:3",
                                         .syncPageReceived(SyncPage(runID: "run-42", pageIndex: 3, cursor: "CUR", objectCount: 100,
                                                                    relatedObjectCount: 7)))),
            ("sync-completed", event(.fullSync, "sync:run-42:done",
                                     .syncCompleted(SyncCompletion(runID: "run-42", mode: .full, beginTime: nil,
                                                                   latestTime: "2025-03-04T10:15:31Z", pageCount: 4,
                                                                   objectCount: 307)))),
            ("local-edit-proposed", event(.localEdit, "localEditProposed:key-1",
                                          .localEditProposed(LocalEdit(actor: "alice", device: "ipad-7", targetIDs: ["VAR_1"],
                                                                       baseVersions: [ObjectVersion(objectID: "VAR_1", version: 100)],
                                                                       requestBody: Array(#"{"idempotency_key":"key-1"}"#.utf8),
                                                                       idempotencyKey: "key-1")))),
            ("upsert-accepted", event(.upsertResponse, "upsertAccepted:key-1",
                                      .upsertAccepted(UpsertAcceptance(idempotencyKey: "key-1",
                                                                       newVersions: [ObjectVersion(objectID: "VAR_1", version: 200)],
                                                                       idMappings: [.init(clientObjectID: "#v", objectID: "VAR_1")],
                                                                       responseBody: Array("{}".utf8))))),
            ("upsert-rejected", event(.upsertResponse, "upsertRejected:key-2",
                                      .upsertRejected(UpsertRejection(idempotencyKey: "key-2", httpStatus: 400,
                                                                      errorBody: Array(#"{"errors":[]}"#.utf8),
                                                                      followUpObjects: [variation])))),
            ("compaction-marker", event(.importFile, "compaction:9",
                                        .compactionMarker(CompactionMarker(throughSequence: 9, stateDigest: [0xAB, 0xCD])))),
            ("write-accepted", event(.upsertResponse, "writeAccepted:img-1",
                                     .writeAccepted(WriteAcceptance(
                                        call: "CreateCatalogImage", idempotencyKey: "img-1",
                                        movedVersions: [ObjectVersion(objectID: "IMG_1", version: 300),
                                                        ObjectVersion(objectID: "ITEM_1", version: 300)],
                                        updatedAt: "2025-03-04T10:15:30.300Z",
                                        responseBody: Array(#"{"image":{}}"#.utf8))))),
            ("locations-observed", event(.fullSync, "locations:sync-1",
                                         .locationsObserved(LocationsObservation(
                                            locations: [SquareLocation(id: "L1", name: "Main Street", status: "ACTIVE"),
                                                        SquareLocation(id: "L2", name: "", status: "INACTIVE")],
                                            responseBody: Array(#"{"locations":[]}"#.utf8))))),
            ("price-history-retained", event(.compaction, RetainedPriceHistory.dedupeKey(objectID: "VAR_1", baseDedupeKey: "obs:VAR_1:100"),
                                             .priceHistoryRetained(retainedPrices))),
        ]
    }

    /// Two versions' changes: the base price set from none, then changed, and a location price set.
    static var retainedPrices: RetainedPriceHistory {
        func change(_ scope: PriceScope, _ before: Money?, _ after: Money?, version: Int64, sequence: UInt64) -> PriceChange {
            PriceChange(objectID: "VAR_1", objectType: .itemVariation, sku: version == 100 ? "SKU-1" : nil, scope: scope,
                        // The texts as the version that wrote the golden bytes formatted money.
                        before: before.map { "\($0.amount) \($0.currency)" }, after: after.map { "\($0.amount) \($0.currency)" },
                        beforeMoney: before, afterMoney: after,
                        version: version, updatedAt: "2025-03-04T10:15:30.123Z", updatedAtNanos: 1_741_083_330_123_000_000 + version,
                        firstRecordedAt: 1_741_083_331_000_000_000 + Int64(sequence), firstSequence: sequence, source: .incrementalSync)
        }
        return RetainedPriceHistory(
            objectType: .itemVariation, objectID: "VAR_1", baseDedupeKey: "obs:VAR_1:100", baseSequence: 12, parentIDs: ["ITEM_1"],
            changes: [change(.base, nil, Money(amount: 450, currency: "USD"), version: 90, sequence: 3),
                      change(.base, Money(amount: 450, currency: "USD"), Money(amount: 500, currency: "USD"), version: 100, sequence: 12),
                      change(.location("L1"), nil, Money(amount: 525, currency: "USD"), version: 100, sequence: 12)])
    }
}

@Suite("Event codec")
struct EventCodecTests {
    static func hex(_ bytes: [UInt8]) -> String { DedupeKey.hex(bytes) + "\n" }

    static func unhex(_ text: String) -> [UInt8] {
        let digits = Array(text.utf8.filter { $0 != 0x0A })
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
    }

    @Test("every kind has a golden encoding that decodes back to the same event")
    func goldens() throws {
        #expect(Set(GoldenEvents.all.map(\.event.kind)) == Set(EventKind.allCases))
        let write = ProcessInfo.processInfo.environment["CATALOG_MODEL_WRITE_GOLDENS"] == "1"
        for (name, event) in GoldenEvents.all {
            let encoded = EventCodec.encode(event)
            let url = FixtureFiles.root.appendingPathComponent("events/\(name).hex")
            if write { try Self.hex(encoded).write(to: url, atomically: true, encoding: .utf8) }
            let golden = Self.unhex(try String(contentsOf: url, encoding: .utf8))
            #expect(encoded == golden, "encoding of \(name) changed")
            let decoded = try EventCodec.decode(sequence: 7, recordedAt: 1_741_083_331_000_000_000, payload: golden)
            #expect(decoded.content == event)
            #expect(decoded.sequence == 7)
            #expect(decoded.recordedAt == 1_741_083_331_000_000_000)
        }
    }

    @Test("an unknown future kind is a thrown error that names it")
    func unknownKind() throws {
        var bytes = EventCodec.encode(GoldenEvents.all[0].event)
        bytes[1] = 200
        let error = try #require(throws: CatalogModelError.self) { try EventCodec.decode(sequence: 5, recordedAt: 0, payload: bytes) }
        #expect(error.code == .unknownEventKind)
        #expect(error.message.contains("200"))
        #expect(error.location.contains("event 5"))
    }

    @Test("an unknown format version is a thrown error that names it")
    func unknownVersion() throws {
        var bytes = EventCodec.encode(GoldenEvents.all[0].event)
        bytes[0] = 2
        let error = try #require(throws: CatalogModelError.self) { try EventCodec.decode(sequence: 0, recordedAt: 0, payload: bytes) }
        #expect(error.code == .unsupportedFormatVersion)
        #expect(error.message.contains("version 2"))
    }

    @Test("every truncation of every golden is a thrown error")
    func truncations() {
        for (name, event) in GoldenEvents.all {
            let bytes = EventCodec.encode(event)
            for length in 0..<bytes.count {
                #expect(throws: CatalogModelError.self, "\(name) cut at \(length)") {
                    try EventCodec.decode(sequence: 0, recordedAt: 0, payload: Array(bytes[0..<length]))
                }
            }
            #expect(throws: CatalogModelError.self) { try EventCodec.decode(sequence: 0, recordedAt: 0, payload: bytes + [0]) }
            // An overlong varint for the merchant id length (0x8A 0x00 instead of 0x0A).
            var overlong = bytes
            overlong.replaceSubrange(2...2, with: [bytes[2] | 0x80, 0])
            #expect(throws: CatalogModelError.self) { try EventCodec.decode(sequence: 0, recordedAt: 0, payload: overlong) }
        }
    }

    @Test("random garbage never crashes the decoder")
    func garbage() {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("EventCodecTests.garbage seed \(seed)")
        var rng = SeededGenerator(seed: seed)
        let goldens = GoldenEvents.all.map { EventCodec.encode($0.event) }
        for round in 0..<5_000 {
            var bytes = goldens[round % goldens.count]
            // Flip a few bytes after the version byte so most inputs reach the body decoder.
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let index = Int.random(in: 1..<bytes.count, using: &rng)
                bytes[index] = UInt8.random(in: 0...255, using: &rng)
            }
            if let event = try? EventCodec.decode(sequence: 0, recordedAt: 0, payload: bytes) {
                // Whatever decodes must re-encode to the same bytes: no silent loss.
                #expect(EventCodec.encode(event.content) == bytes, "seed \(seed) round \(round)")
            }
        }
    }

    @Test("observation payloads are stored byte for byte and the builder flattens nested objects")
    func builderFlattens() throws {
        let body = try FixtureFiles.square("object-item-with-variations.json")
        let response = Array(#"{"objects":["#.utf8) + body + Array("]}".utf8)
        let events = try EventBuilder.eventsFromReadResponse(body: response, merchantID: "M", source: .fullSync, correlationID: "run-1")
        #expect(events.count == 4)
        guard case .objectObserved(let item) = events[0].body else { Issue.record("not an observation"); return }
        #expect(item.payload == body.trimmingJSONWhitespace())
        #expect(events[1].body.header?.parentID == "ITEM_LATTE")
        #expect(events[0].dedupeKey.hasPrefix("obs:ITEM_LATTE:1741083330123:"))
        #expect(Set(events.map(\.dedupeKey)).count == 4)
    }

    @Test("delete responses cascade to known children")
    func deleteCascade() throws {
        let events = try EventBuilder.eventsFromDeleteResponse(
            body: try FixtureFiles.square("response-batch-delete.json"), merchantID: "M", source: .upsertResponse,
            correlationID: "del-1", objectTypeOf: { $0 == "ITEM_MOCHA" ? .item : .itemVariation },
            childrenOf: { $0 == "ITEM_MOCHA" ? ["VAR_MOCHA_R", "VAR_MOCHA_XL"] : [] })
        #expect(events.map { $0.body.header!.objectID } == ["ITEM_MOCHA", "VAR_MOCHA_R", "VAR_MOCHA_XL"])
        #expect(events.allSatisfy { $0.body.header!.isDeleted && $0.body.header!.updatedAt == "2025-03-08T12:00:00.001Z" })
        guard case .objectDeleted(let child) = events[1].body else { Issue.record("not a deletion"); return }
        #expect(child.cascadedFrom == "ITEM_MOCHA")
    }

    @Test("webhooks dedupe on event_id")
    func webhookDedupe() throws {
        let body = try FixtureFiles.square("webhook-catalog-version-updated.json")
        let a = try EventBuilder.webhookEvent(body: body, headers: [], signatureVerdict: .valid, correlationID: "d1")
        let b = try EventBuilder.webhookEvent(body: body, headers: [HTTPHeader(name: "square-retry-number", value: "1")],
                                              signatureVerdict: .valid, correlationID: "d2")
        #expect(a.dedupeKey == "wh:5f3c0a1e-7b7e-4c4f-9d7e-1f2e3d4c5b6a")
        #expect(a.dedupeKey == b.dedupeKey)
        #expect(a.merchantID == "MERCHANT_1")
    }

    @Test("a sync page yields its bookkeeping event then its observations")
    func syncPage() throws {
        let events = try EventBuilder.syncPageEvents(body: try FixtureFiles.square("response-search.json"), runID: "run-9",
                                                     mode: .incremental, pageIndex: 0, merchantID: "M")
        #expect(events.map(\.kind) == [.syncPageReceived, .objectObserved, .objectObserved, .objectObserved, .objectObserved])
        guard case .syncPageReceived(let page) = events[0].body else { Issue.record("not a page"); return }
        #expect(page.cursor == "CURSOR-PAGE-2" && page.objectCount == 2 && page.relatedObjectCount == 1)
        #expect(events[0].dedupeKey == "sync:run-9:page:0")
        #expect(events.allSatisfy { $0.source == .incrementalSync && $0.correlationID == "run-9" })
    }
}
