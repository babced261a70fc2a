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
        let reader = try await LedgerQueriesNamesTests.sample.get().reader
        // A minute of folding: on a thread of its own, not one of the cooperative pool's two, which
        // the servers of the suites running beside it need to answer in time.
        try await onThread { try Self.compareEveryAnswer(reader) }
    }

    static func compareEveryAnswer(_ reader: LedgerReader) throws {
        let queries = LedgerQueries(reader: reader)
        // The reference: the same answers from the whole log, without the index (and so without shared reads).
        let wholeLog = LedgerQueries(reader: reader, historyIndex: false)
        // Every third object (items, variations, modifiers, categories, deleted ones among them): the answers
        // asked alone cost about a second per ten objects in a debug build.
        let every = Set(try reader.allEvents().compactMap { $0.header?.objectID }).sorted { $0.rawValue < $1.rawValue }
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

/// The change feed through the history index reads the page's range and the objects it names; its
/// pages are the whole log's, from every cursor, at every size.
@Suite("the change feed through the index")
struct ChangeFeedThroughTheIndexTests {
    @Test("pages from cursors across the cafe history, limits 1 to 1,000, equal the whole log's")
    func indexedPagesAreTheWholeLogs() async throws {
        let ledger = try await LedgerQueriesNamesTests.sample.get()
        // Seconds of folding: on a thread of its own, not one of the cooperative pool's two, which
        // the servers of the suites running beside it need to answer in time.
        let reader = ledger.reader
        try await onThread { try Self.compareEveryPage(reader) }
    }

    static func compareEveryPage(_ reader: LedgerReader) throws {
        let indexed = LedgerQueries(reader: reader)
        let wholeLog = LedgerQueries(reader: reader, historyIndex: false)
        let last = try #require(try reader.lastSequence())
        // Cursors: before the first event, every 53rd sequence and the end; pages ending short of
        // the log too. (The whole log's feed folds every event per page: more cursors cost minutes.)
        let cursors: [UInt64?] = [nil] + stride(from: UInt64(0), through: last, by: 53).map { $0 } + [last]
        var compared = 0, changes = 0
        for after in cursors {
            for limit in [1, 4, 1_000] {
                for end in [last, last * 2 / 3] where after.map({ $0 <= end }) ?? true {
                    let expected = try wholeLog.changes(after: after, through: end, limit: limit)
                    let page = try indexed.changes(after: after, through: end, limit: limit)
                    #expect(page == expected, "after \(after.map(String.init) ?? "nil"), limit \(limit), through \(end)")
                    compared += 1
                    changes += expected.changes.count
                }
            }
        }
        #expect(compared > 100 && changes > 300, "\(compared) pages, \(changes) changes")
        // Followed page by page, the indexed feed ends where the log does.
        var cursor: UInt64?
        var pages = 0
        repeat {
            let page = try indexed.changes(after: cursor, through: last, limit: 25)
            #expect(page == (try wholeLog.changes(after: cursor, through: last, limit: 25)))
            cursor = page.through
            pages += 1
            if !page.more { break }
        } while pages < 10_000
        #expect(cursor == last)
    }
}
