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
    ///
    /// Through the history index, a page reads the events of its range up to where it ends (not the
    /// log) and the facts of the objects it names, their parents and children (not every object's);
    /// without it, the whole log folded. Both give the same pages.
    public func changes(after: UInt64?, through last: UInt64, limit: Int) throws -> ChangePage {
        // trap-safe: the change feed route checks limit in 1...limitMax before calling (ChangeFeedAPI); tests pass positive literals
        precondition(limit > 0, "a page holds at least one change")
        guard index != nil else { return try changesFromTheWholeLog(after: after, through: last, limit: limit) }
        return try sharingReads {
            try catchUp()
            // The state at `after` of the objects the range names, read as the scan meets them.
            var parentBefore: [CatalogObjectID: CatalogObjectID?] = [:]
            func parentAtCursor(_ id: CatalogObjectID) throws -> CatalogObjectID? {
                if let known = parentBefore[id] { return known }
                guard let after else { return nil }
                let parent = try state(of: [id], through: after)[id]?.header.parentID
                parentBefore[id] = .some(parent)
                return parent
            }
            var cursor = try reader.events(from: after.map { $0 + 1 } ?? 0)
            var touched = Set<CatalogObjectID>()
            var through = after
            var more = false
            while let event = try cursor.next(), event.sequence <= last {
                if let header = event.header {
                    var ids = [header.objectID]
                    if let parent = try header.parentID ?? parentAtCursor(header.objectID) { ids.append(parent) }
                    let new = ids.filter { !touched.contains($0) }
                    if !touched.isEmpty, touched.count + new.count > limit {
                        more = true
                        break
                    }
                    touched.formUnion(new)
                }
                through = event.sequence
            }
            if !more, through.map({ $0 < last }) ?? true, after.map({ $0 < last }) ?? true { through = last }
            guard let end = through, !touched.isEmpty else { return ChangePage(changes: [], through: through, more: more) }

            // The facts at the page's end of the touched objects, the parents they may be nested in
            // (then or at the cursor) and every child of those: what the assembled JSON is made of.
            let atEnd = try state(of: Array(touched), through: end)
            var parents = Set<CatalogObjectID>()
            for id in touched {
                if let parent = atEnd[id]?.header.parentID { parents.insert(parent) }
                if let parent = try parentAtCursor(id) { parents.insert(parent) }
            }
            var ids = touched.union(parents)
            for parent in touched.union(parents) { ids.formUnion(try childIDs(of: parent)) }
            let facts = try state(of: Array(ids), through: end)
            return ChangePage(changes: try Self.changes(touched: touched, after: after, state: facts, parentBefore: { try parentAtCursor($0) }),
                              through: through, more: more)
        }
    }

    /// The facts of `ids` folded from their events up to sequence `last`.
    private func state(of ids: [CatalogObjectID], through last: UInt64) throws -> CatalogState {
        CatalogState.fold(try history(of: ids).events.lazy.filter { $0.sequence <= last })
    }

    /// The page's changes from the touched objects and the state at its end: the changed facts, then
    /// the parents they were re-assembled into, in ledger order.
    private static func changes(touched: Set<CatalogObjectID>, after: UInt64?, state: CatalogState,
                                parentBefore: (CatalogObjectID) throws -> CatalogObjectID?) throws -> [ObjectChange] {
        var changedAt: [CatalogObjectID: UInt64] = [:]
        for id in touched {
            guard let fact = state[id], after.map({ fact.firstSequence > $0 }) ?? true else { continue }
            changedAt[id] = max(changedAt[id] ?? 0, fact.firstSequence)
            if let parent = try fact.header.parentID ?? parentBefore(id), state[parent] != nil {
                changedAt[parent] = max(changedAt[parent] ?? 0, fact.firstSequence)
            }
        }
        return changedAt.compactMap { id, sequence -> ObjectChange? in
            guard let fact = state[id] else { return nil }
            return ObjectChange(sequence: sequence, fact: fact, payload: state.materializedPayload(of: id) ?? fact.payload)
        }.sorted { ($0.sequence, $0.fact.header.objectID) < ($1.sequence, $1.fact.header.objectID) }
    }

    /// The change feed from every event folded (no history index).
    private func changesFromTheWholeLog(after: UInt64?, through last: UInt64, limit: Int) throws -> ChangePage {
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

        let changes = try Self.changes(touched: touched, after: after, state: state, parentBefore: { before[$0]?.header.parentID })
        return ChangePage(changes: changes, through: through, more: more)
    }
}
