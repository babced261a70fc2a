import SquareWire
import Testing
@testable import CatalogModel

/// The as-of view of a parent: own fields from its fact in force, the nested array from each
/// child's fact in force; and the join's decision between same-version twins.
struct NestedAssemblyTests {
    static func variation(_ id: String, version: Int64, price: Int64, ordinal: Int? = nil) -> String {
        let ordinalText = ordinal.map { #","ordinal":\#($0)"# } ?? ""
        return #"{"type":"ITEM_VARIATION","id":"\#(id)","version":\#(version),"updated_at":"\#(RFC3339.format(nanoseconds: version * 1_000_000))","item_variation_data":{"item_id":"I"\#(ordinalText),"price_money":{"amount":\#(price),"currency":"USD"}}}"#
    }

    static func item(version: Int64, name: String, variations: [String]) -> String {
        let array = variations.isEmpty ? "" : #","variations":[\#(variations.joined(separator: ","))]"#
        return #"{"type":"ITEM","id":"I","version":\#(version),"updated_at":"\#(RFC3339.format(nanoseconds: version * 1_000_000))","item_data":{"name":"\#(name)"\#(array),"tax_ids":["T"]}}"#
    }

    static func events(_ bodies: [String], startingAt sequence: UInt64) throws -> [LedgerEvent] {
        var next = sequence
        return try bodies.flatMap { body in
            try EventBuilder.eventsFromReadResponse(body: Array(#"{"objects":[\#(body)]}"#.utf8), merchantID: "M",
                                                    source: .incrementalSync, correlationID: "r").map { pending in
                defer { next += 1 }
                return LedgerEvent(sequence: next, recordedAt: Int64(next) * 1_000, content: pending)
            }
        }
    }

    @Test func ownFieldsDropOnlyTheNestedArray() throws {
        let payload = Array(Self.item(version: 1, name: "Tea", variations: [Self.variation("A", version: 1, price: 1)]).utf8)
        let own = NestedAssembly.ownFields(of: payload, type: .item)
        let json = try JSONScanner.parse(own)
        #expect(json["item_data"]?["variations"] == nil)
        #expect(json["item_data"]?["name"]?.stringValue == "Tea")
        #expect(json["item_data"]?["tax_ids"] != nil)
        #expect(NestedAssembly.ownFields(of: Array(Self.variation("A", version: 1, price: 1).utf8), type: .itemVariation)
                == Array(Self.variation("A", version: 1, price: 1).utf8))
    }

    @Test func asOfRebuildsChildrenInForceAndKeepsTheirOrder() throws {
        let v: Int64 = 1_790_000_000_000
        // v: item with A (ordinal 2) and B (ordinal 1). v+10: A repriced alone. v+20: C added alone.
        // v+30: B deleted. Then a re-observation of the item at v with today's children (a twin).
        var all = try Self.events([Self.item(version: v, name: "Tea", variations: [
            Self.variation("B", version: v, price: 100, ordinal: 1), Self.variation("A", version: v, price: 200, ordinal: 2)])],
                                  startingAt: 0)
        all += try Self.events([Self.variation("A", version: v + 10, price: 250, ordinal: 2)], startingAt: 10)
        all += try Self.events([Self.variation("C", version: v + 20, price: 300, ordinal: 3)], startingAt: 20)
        all.append(LedgerEvent(sequence: 30, recordedAt: 30_000, content: PendingEvent(
            merchantID: "M", source: .webhook, dedupeKey: DedupeKey.deletion(id: "B", version: v + 30), correlationID: "d",
            body: .objectDeleted(ObjectDeletion(header: CatalogFactHeader(objectType: .itemVariation, objectID: "B", version: v + 30,
                                                                           updatedAtNanos: (v + 30) * 1_000_000, updatedAt: "",
                                                                           isDeleted: true, parentID: "I"), cascadedFrom: nil)))))
        all += try Self.events([Self.item(version: v, name: "Tea", variations: [
            Self.variation("A", version: v + 10, price: 250, ordinal: 2), Self.variation("C", version: v + 20, price: 300, ordinal: 3)])],
                               startingAt: 40)

        func children(at t: Int64?) throws -> [(String, Int64?, Int64?)] {
            let state = CatalogState.fold(all, filter: AsOf(squareTimeMax: t.map { $0 * 1_000_000 }))
            let object = try CatalogObject(bytes: try #require(state.materializedPayload(of: "I")))
            #expect(object.name == "Tea")
            return object.nested.map { ($0.id.rawValue, $0.version, $0.priceMoney?.amount) }
        }
        #expect(try children(at: v + 5).map(\.0) == ["B", "A"])
        #expect(try children(at: v + 5).map(\.2) == [100, 200])
        #expect(try children(at: v + 15).map(\.2) == [100, 250])
        #expect(try children(at: v + 25).map(\.0) == ["B", "A", "C"])
        #expect(try children(at: nil).map(\.0) == ["A", "C"])

        // As known at ledger time K (events are recorded at sequence x 1,000): the children the ledger had
        // learned by then; and both clocks together.
        func known(at k: Int64, asOf t: Int64? = nil) throws -> [(String, Int64?)] {
            let state = CatalogState.fold(all, filter: AsOf(squareTimeMax: t.map { $0 * 1_000_000 }, ledgerTimeMax: k))
            return try CatalogObject(bytes: try #require(state.materializedPayload(of: "I"))).nested.map { ($0.id.rawValue, $0.priceMoney?.amount) }
        }
        #expect(try known(at: 15_000).map(\.0) == ["B", "A"])
        #expect(try known(at: 15_000).map(\.1) == [100, 250])
        #expect(try known(at: 25_000).map(\.0) == ["B", "A", "C"])
        #expect(try known(at: 25_000, asOf: v + 5).map(\.1) == [100, 200])

        // The same answer whatever the order the events are folded in (the join is commutative).
        let reversed = CatalogState.fold(all.reversed(), filter: AsOf(squareTimeMax: (v + 15) * 1_000_000))
        let forward = CatalogState.fold(all, filter: AsOf(squareTimeMax: (v + 15) * 1_000_000))
        #expect(reversed.materializedPayload(of: "I") == forward.materializedPayload(of: "I"))
        // The twin learned later does not win: the item's fact is the first learned (sequence 0).
        #expect(forward["I"]?.firstSequence == 0)
        #expect(CatalogState.fold(all)["I"]?.firstSequence == 0)
    }

    @Test func twinsThatDifferInOwnFieldsAreReported() throws {
        let v: Int64 = 1_790_000_000_000
        let events = try Self.events([Self.item(version: v, name: "Tea", variations: [Self.variation("A", version: v, price: 1)]),
                                      Self.item(version: v, name: "Tea", variations: [Self.variation("A", version: v + 1, price: 2)]),
                                      Self.item(version: v, name: "Green Tea", variations: [])], startingAt: 0)
        let history = CatalogHistory(events: events)
        let twins = history.sameVersionTwins()
        #expect(twins.count == 1)
        #expect(twins.first?.keptSequence == 0)
        #expect(twins.first?.differences.map(\.path) == ["item_data.name"])
        #expect(history.twinCounts().pairs == 1)
        // Entity history: the nested-only twin brings no change; the own-field twin does.
        let versions = history.entityHistory(of: "I")
        #expect(versions.map(\.firstSequence) == [0, versions.last!.firstSequence])
        #expect(versions.last?.changes.map(\.path) == ["item_data.name"])
        #expect(CatalogState.fold(events)["I"]?.firstSequence == 0, "the first learned is kept")
    }

    /// Children of equal ordinal are listed in creation order, even when the one created first was
    /// repriced (so its fact in force was learned) after the other was created (oracle seed 1209).
    @Test func equalOrdinalsFollowCreationNotLearning() throws {
        let v: Int64 = 1_790_000_000_000
        func child(_ id: String, version: Int64, created: Int64, price: Int64) -> String {
            #"{"type":"ITEM_VARIATION","id":"\#(id)","version":\#(version),"created_at":"\#(RFC3339.format(nanoseconds: created * 1_000_000))","updated_at":"\#(RFC3339.format(nanoseconds: version * 1_000_000))","item_variation_data":{"item_id":"I","ordinal":1,"price_money":{"amount":\#(price),"currency":"USD"}}}"#
        }
        var all = try Self.events([Self.item(version: v, name: "Tea", variations: [])], startingAt: 0)
        all += try Self.events([child("OLD", version: v + 10, created: v + 10, price: 1)], startingAt: 10)
        all += try Self.events([child("NEW", version: v + 20, created: v + 20, price: 2)], startingAt: 20)
        all += try Self.events([child("OLD", version: v + 30, created: v + 10, price: 3)], startingAt: 30)
        let object = try CatalogObject(bytes: try #require(CatalogState.fold(all).materializedPayload(of: "I")))
        #expect(object.nested.map(\.id.rawValue) == ["OLD", "NEW"])
    }
}
