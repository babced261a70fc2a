import CatalogModel
import Testing

/// Versions a write named, checked against what Square showed (issue 42, item 3).
@Suite struct ClaimConfirmationTests {
    static func event(_ sequence: UInt64, _ body: EventBody, source: EventSource = .incrementalSync) -> LedgerEvent {
        LedgerEvent(sequence: sequence, recordedAt: Int64(sequence) * 1_000,
                    content: PendingEvent(merchantID: MerchantID("M1"), source: source, dedupeKey: "k\(sequence)",
                                          correlationID: "c", body: body))
    }

    static func observed(_ sequence: UInt64, _ id: String, _ version: Int64, source: EventSource = .incrementalSync) -> LedgerEvent {
        let header = CatalogFactHeader(objectType: "ITEM", objectID: CatalogObjectID(id), version: version, updatedAtNanos: 0,
                                       updatedAt: "", isDeleted: false, parentID: nil)
        return event(sequence, .objectObserved(ObjectObservation(header: header, payload: Array("{}".utf8))), source: source)
    }

    static func accepted(_ sequence: UInt64, _ key: String, _ versions: [(String, Int64)]) -> LedgerEvent {
        event(sequence, .upsertAccepted(UpsertAcceptance(
            idempotencyKey: key, newVersions: versions.map { ObjectVersion(objectID: CatalogObjectID($0.0), version: $0.1) },
            idMappings: [], responseBody: [])), source: .upsertResponse)
    }

    static func sync(_ start: UInt64, _ end: UInt64, run: String) -> [LedgerEvent] {
        [event(start, .syncStarted(SyncStart(runID: run, mode: .incremental, beginTime: nil))),
         event(end, .syncCompleted(SyncCompletion(runID: run, mode: .incremental, beginTime: nil, latestTime: nil,
                                                  pageCount: 1, objectCount: 0)))]
    }

    @Test("a claimed version Square never showed is flagged once a sync ran after it; one it showed, before or after, is not")
    func claimsAreJudgedBySquaresObservations() {
        var events = [Self.observed(1, "A", 10), Self.observed(2, "B", 10)]
        events.append(Self.accepted(3, "own-edit", [("A", 11)]))
        events.append(Self.observed(4, "A", 11, source: .upsertResponse))  // the server's own exchange
        events.append(Self.accepted(5, "forged", [("B", Int64.max - 1)]))
        events.append(Self.accepted(6, "ahead", [("C", 7)]))
        events += Self.sync(7, 9, run: "r1")
        events.insert(Self.observed(8, "C", 8), at: events.count - 1)
        events.append(Self.accepted(10, "late", [("B", 12)]))  // no sync after it yet: not judged
        let unconfirmed = ClaimConfirmation.unconfirmed(in: events)
        #expect(unconfirmed.map(\.idempotencyKey) == ["forged"], "\(unconfirmed)")
        #expect(unconfirmed.first?.squareVersion == 10 && unconfirmed.first?.claimedVersion == Int64.max - 1)

        // A sync that started before a claim does not judge it, even if it completes after.
        let overlapping = [Self.observed(1, "B", 10), Self.event(2, .syncStarted(SyncStart(runID: "r", mode: .full, beginTime: nil))),
                           Self.accepted(3, "during", [("B", 99)]),
                           Self.event(4, .syncCompleted(SyncCompletion(runID: "r", mode: .full, beginTime: nil, latestTime: nil,
                                                                       pageCount: 1, objectCount: 1)))]
        #expect(ClaimConfirmation.unconfirmed(in: overlapping).isEmpty)
        #expect(ClaimConfirmation.unconfirmed(in: overlapping + Self.sync(5, 6, run: "r2")).map(\.idempotencyKey) == ["during"])
    }
}
