import CatalogModel

/// The parsed payload of the last fact written for each recently changed object, so that an
/// event's JSON is parsed once on the follower's commit path instead of five times (the new
/// winner for its row, its prices and its SKU; the previous winner, read back from the database,
/// for its row and its prices). Measured at full size, JSON parsing was about 45 % of the
/// follower's CPU per event, and the follower's CPU is what decides whether it keeps up when the
/// machine's cores are shared.
///
/// An entry is used only for the very same bytes and parent (compared in full), so it can never
/// describe another version of the object. Bounded: when full it starts over (a catch-up batch
/// of many distinct objects gains little from it anyway).
///
/// Thread-safety: none of its own. One projector drives one batch at a time (catch-up or follow,
/// whose writes the database's writer queue serializes), and that is the only user.
final class ParsedObjectCache: @unchecked Sendable {
    private struct Entry {
        var payload: [UInt8]
        var parentID: CatalogObjectID?
        var object: CatalogObject?
    }

    private var entries: [CatalogObjectID: Entry] = [:]
    private let entriesMax: Int

    init(entriesMax: Int = 4_096) {
        precondition(entriesMax > 0)
        self.entriesMax = entriesMax
    }

    /// The object `fact` carries, parsed with its parent (as `RowMapping` parses it), or nil when
    /// the payload is empty or does not parse.
    func object(for fact: ObjectFact) -> CatalogObject? {
        if fact.payload.isEmpty { return nil }
        let id = fact.header.objectID
        if let entry = entries[id], entry.parentID == fact.header.parentID, entry.payload == fact.payload {
            return entry.object
        }
        let object = try? CatalogObject(bytes: fact.payload, parentID: fact.header.parentID)
        if entries.count >= entriesMax { entries.removeAll(keepingCapacity: true) }
        entries[id] = Entry(payload: fact.payload, parentID: fact.header.parentID, object: object)
        return object
    }
}
