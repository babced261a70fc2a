import CatalogLedger
import CatalogModel
import Foundation
import LedgerQueries
import SquareWire
import TestSupport
import Testing

/// `LedgerQueries.sharingReads` (one page: the index caught up once, each object's facts read once)
/// changes what answers cost, never what they say.
@Suite("answers sharing their reads", .serialized)
struct LedgerQueriesReadScopeTests {
    @Test("inside one scope every answer about every object of the cafe history equals the whole log's answer")
    func sharedReadsGiveTheSameAnswers() async throws {
        let ledger = try await LedgerQueriesNamesTests.sample.get()
        let queries = LedgerQueries(reader: ledger.reader)
        // The reference: the same answers from the whole log, without the index (and so without shared reads).
        let wholeLog = LedgerQueries(reader: ledger.reader, historyIndex: false)
        // Every third object (items, variations, modifiers, categories, deleted ones among them): the answers
        // asked alone cost about a second per ten objects in a debug build.
        let every = Set(try ledger.reader.allEvents().compactMap { $0.header?.objectID }).sorted { $0.rawValue < $1.rawValue }
        let ids = stride(from: 0, to: every.count, by: 3).map { every[$0] }
        let points = [AsOf.latest, LedgerQueriesNamesTests.at("2026-10-05T00:00:00Z"),
                      AsOf(ledgerTimeMax: RFC3339.nanoseconds("2026-11-05T00:00:00Z")!)]
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        /// Every answer a page asks about `id`: values where they compare, else JSON with sorted keys.
        struct Answers: Equatable {
            var versions: [EntityVersion]
            var children: [[EntityVersion]]
            var json: [String]
            var objects: [ObjectAsOf?]
        }
        func answers(_ id: CatalogObjectID, _ queries: LedgerQueries) throws -> Answers {
            let json = [String(decoding: try encoder.encode(try queries.prices(of: id)), as: UTF8.self),
                        String(decoding: try encoder.encode(try queries.history(of: id)), as: UTF8.self),
                        try queries.names(of: [id]).name(of: id) ?? "-"]
            return Answers(versions: try queries.entityHistory(of: id), children: try queries.childHistories(of: id).map(\.versions),
                           json: json, objects: try points.map { try queries.object(id, asOf: $0) })
        }
        #expect(ids.count > 40)
        let alone = try ids.map { try answers($0, wholeLog) }
        let shared = try queries.sharingReads { try ids.map { try answers($0, queries) } }
        #expect(shared.count == alone.count)
        for (index, id) in ids.enumerated() {
            #expect(shared[index] == alone[index], "\(id)")
        }
        // One page at a time: each object of a scope of its own, as the pages ask.
        for (index, id) in ids.enumerated() {
            #expect(try queries.sharingReads { try answers(id, queries) } == alone[index], "\(id)")
            #expect(try answers(id, queries) == alone[index], "\(id), each answer in a scope of its own")
        }
    }
}
