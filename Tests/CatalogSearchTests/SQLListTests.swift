@testable import CatalogSearch
import GRDB
import Testing

/// Lists reach SQL as one JSON argument; what `json_each` reads back must be exactly the list.
@Suite struct SQLListTests {
    @Test func integersComeBackInOrder() throws {
        let values: [Int64] = [42, -7, 0, Int64.max, Int64.min]
        let read = try DatabaseQueue().read { db in
            try Int64.fetchAll(db, sql: "SELECT value FROM json_each(?) ORDER BY key", arguments: [SQLList.json(values)])
        }
        #expect(read == values)
        #expect(SQLList.json([Int64]()) == "[]")
    }

    @Test(arguments: [
        ["plain", "t-shirt", "joes"],
        ["quote \" inside", "back\\slash", "tab\tand\nnewline", "\u{01}control"],
        ["crème", "smørrebrød", "😀"],
    ])
    func stringsNeedingEscapesComeBackUnchanged(values: [String]) throws {
        let read = try DatabaseQueue().read { db in
            try String.fetchAll(db, sql: "SELECT value FROM json_each(?) ORDER BY key", arguments: [SQLList.json(values)])
        }
        #expect(read == values)
    }
}
