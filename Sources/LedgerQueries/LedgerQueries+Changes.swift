import CatalogLedger
import CatalogModel

/// One object of the change feed: its state in force at the end of the page.
public struct ObjectChange: Sendable, Hashable {
    /// The event (after the cursor) that changed the object: the one that made its fact, or a
    /// child's, the one in force; changes are in this order.
    public var sequence: UInt64
    /// The fact in force at the end of the page (a tombstone when deleted).
    public var fact: ObjectFact
    /// Square's JSON of the object then, a parent with its nested array rebuilt from its children's
    /// facts (`CatalogState.materializedPayload`); empty for a tombstone learned without payload.
    public var payload: [UInt8]
}

/// A page of the change feed.
public struct ChangePage: Sendable, Hashable {
    /// Objects whose state changed in (`after`, `through`], in ledger order.
    public var changes: [ObjectChange]
    /// The last sequence the page covers: the cursor of the next page (`after`). Equal to `after`
    /// (nil before the first event) when nothing was there.
    public var through: UInt64?
    /// True when events past `through` (up to the bound asked for) were left for the next page.
    public var more: Bool

    public init(changes: [ObjectChange], through: UInt64?, more: Bool) {
        self.changes = changes
        self.through = through
        self.more = more
    }
}

extension LedgerQueries {
    /// The change feed: every object whose state in force changed after ledger sequence `after` (all
    /// objects when nil), up to sequence `last` (the durable end the caller may show), at most
    /// `limit` objects per page (a page ends at an event boundary; a parent re-sent because a child
    /// changed counts too, so a page may hold a few more). Each change carries the object's full
    /// current JSON as of the page's end, or its tombstone; applying the pages in order keeps a copy
    /// equal to the catalog as of `through` (the projection's state at that sequence).
    ///
    /// An object counts as changed when its fact in force was learned after `after` (a stale or
    /// repeated observation changes nothing), and a parent (item, modifier list) when one of its
    /// children changed (its nested array is rebuilt from them).
    public func changes(after: UInt64?, through last: UInt64, limit: Int) throws -> ChangePage {
        precondition(limit > 0, "a page holds at least one change")
        let all = try events.all()
        var before = CatalogState()
        var index = 0
        if let after {
            while index < all.count, all[index].sequence <= after {
                before.apply(all[index])
                index += 1
            }
        }
        var state = before
        var touched = Set<CatalogObjectID>()
        var through = after
        var more = false
        while index < all.count, all[index].sequence <= last {
            let event = all[index]
            if let header = event.header {
                var ids = [header.objectID]
                if let parent = header.parentID ?? before[header.objectID]?.header.parentID { ids.append(parent) }
                let new = ids.filter { !touched.contains($0) }
                if !touched.isEmpty, touched.count + new.count > limit {
                    more = true
                    break
                }
                touched.formUnion(new)
            }
            state.apply(event)
            through = event.sequence
            index += 1
        }
        if !more, through.map({ $0 < last }) ?? true, after.map({ $0 < last }) ?? true { through = last }

        // The changed facts, then the parents they were re-assembled into.
        var changedAt: [CatalogObjectID: UInt64] = [:]
        for id in touched {
            guard let fact = state[id], after.map({ fact.firstSequence > $0 }) ?? true else { continue }
            changedAt[id] = max(changedAt[id] ?? 0, fact.firstSequence)
            if let parent = fact.header.parentID ?? before[id]?.header.parentID, state[parent] != nil {
                changedAt[parent] = max(changedAt[parent] ?? 0, fact.firstSequence)
            }
        }
        let changes = changedAt.compactMap { id, sequence -> ObjectChange? in
            guard let fact = state[id] else { return nil }
            return ObjectChange(sequence: sequence, fact: fact, payload: state.materializedPayload(of: id) ?? fact.payload)
        }.sorted { ($0.sequence, $0.fact.header.objectID) < ($1.sequence, $1.fact.header.objectID) }
        return ChangePage(changes: changes, through: through, more: more)
    }
}
