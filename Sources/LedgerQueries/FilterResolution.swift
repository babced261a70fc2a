import CatalogModel
import CatalogProjections

/// Something a filter can name (a category, a location, an item): its id and every name the
/// ledger learned for it (the current one first), so a person can type either.
public struct FilterCandidate: Sendable, Hashable {
    public var id: String
    /// The name shown (the current one); the id when the ledger learned none.
    public var name: String
    /// Every name it had, the current one included (a former name resolves too: "Harbor").
    public var names: [String]
    /// `CATEGORY`, `LOCATION`, `ITEM`.
    public var type: String

    public init(id: String, names: [String], type: String) {
        self.id = id
        self.names = names.filter { !$0.isEmpty }
        name = self.names.first ?? id
        self.type = type
    }

    /// `Harbor Pier [LCAFEHARBOR02]`.
    public var labelled: String { name == id ? id : "\(name) [\(id)]" }
}

/// A filter value resolved to one object: what a command echoes ("location Harbor Pier [LCAFEHARBOR02]").
public struct ResolvedFilter: Sendable, Hashable {
    /// `category`, `location`, `item`.
    public var field: String
    public var candidate: FilterCandidate
    /// The value as typed.
    public var typed: String

    public var id: String { candidate.id }
    public var name: String { candidate.name }

    /// `location "Harbor" = Harbor Pier [LCAFEHARBOR02]`, or `category Coffee [ID]` when the id or name was typed as shown.
    public var echo: String {
        typed == candidate.id || typed == candidate.name
            ? "\(field) \(candidate.labelled)" : "\(field) \"\(typed)\" = \(candidate.labelled)"
    }
}

/// A filter value that names nothing, or several things: the CLI exits 3 with it, the API answers
/// 400 (`unknown_<field>` / `ambiguous_<field>`), a page says so.
public struct FilterValueError: Error, Sendable, CustomStringConvertible, Hashable {
    public enum Reason: String, Sendable, Hashable { case unknown, ambiguous }

    public var field: String
    public var value: String
    public var reason: Reason
    /// Ambiguous: every match; unknown: the nearest names.
    public var candidates: [FilterCandidate]
    /// How to list them all (`catledger categories`).
    public var listing: String?

    /// `unknown_category`, `ambiguous_location`.
    public var code: String { "\(reason.rawValue)_\(field)" }

    public var message: String {
        switch reason {
        case .unknown: "no \(field) \"\(value)\" in the catalog"
        case .ambiguous: "the \(field) \"\(value)\" matches \(candidates.count): give one's id"
        }
    }

    public var hint: String {
        let listed = candidates.map { "\($0.name) (\($0.type), \($0.id))" }.joined(separator: ", ")
        switch reason {
        case .ambiguous: return listed
        case .unknown:
            let list = listing.map { "list them with `\($0)`" }
            if candidates.isEmpty { return list ?? "the catalog has no \(field) of that name" }
            return "did you mean " + listed + "?" + (list.map { "; " + $0 } ?? "")
        }
    }

    public var description: String { "\(message) (\(hint))" }
}

/// The one resolution of a filter value (CLI options, API query parameters, page URL parameters):
/// an id; else a name the object has or had (case-insensitive); else the start of a name or a
/// word of it. One object: that one; several: ambiguous; none: unknown, with the nearest names.
public enum FilterResolution {
    public static func resolve(_ text: String, field: String, among candidates: [FilterCandidate],
                               listing: String? = nil) throws -> ResolvedFilter {
        let typed = text.trimmingCharacters(in: .whitespaces)
        func one(_ matches: [FilterCandidate]) throws -> ResolvedFilter? {
            var seen = Set<String>()
            let unique = matches.filter { seen.insert($0.id).inserted }
            if unique.count == 1 { return ResolvedFilter(field: field, candidate: unique[0], typed: typed) }
            if unique.count > 1 {
                throw FilterValueError(field: field, value: typed, reason: .ambiguous, candidates: unique, listing: listing)
            }
            return nil
        }
        if let exact = try one(candidates.filter { $0.id == typed }) { return exact }
        let lower = typed.lowercased()
        if !lower.isEmpty {
            if let named = try one(candidates.filter { $0.names.contains { $0.lowercased() == lower } }) { return named }
            if let started = try one(candidates.filter { $0.names.contains { name in
                let lowered = name.lowercased()
                return lowered.hasPrefix(lower)
                    || lowered.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).contains { $0.hasPrefix(lower) }
            } }) { return started }
        }
        throw FilterValueError(field: field, value: typed, reason: .unknown, candidates: nearest(lower, candidates), listing: listing)
    }

    /// Up to three candidates whose names are closest to `text` (edit distance, at most a third of
    /// the longer text, at least 2), closest first.
    static func nearest(_ text: String, _ candidates: [FilterCandidate]) -> [FilterCandidate] {
        let scored = candidates.compactMap { candidate -> (Int, FilterCandidate)? in
            let best = (candidate.names + [candidate.id]).map { name -> Int in
                let lowered = name.lowercased()
                return min(distance(text, lowered), lowered.hasPrefix(text) || text.hasPrefix(lowered) ? 1 : .max)
            }.min() ?? .max
            let allowed = max(2, max(text.count, candidate.name.count) / 3)
            return best <= allowed ? (best, candidate) : nil
        }
        return scored.sorted { ($0.0, $0.1.name) < ($1.0, $1.1.name) }.prefix(3).map(\.1)
    }

    /// Levenshtein distance over characters (short texts: names).
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.prefix(64)), b = Array(b.prefix(64))
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = previous
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}

extension LocationDirectory {
    /// Every location the recorded ListLocations answers name, with every name it had (newest first).
    public var filterCandidates: [FilterCandidate] {
        var names: [String: [String]] = [:]
        var order: [String] = []
        for answer in answers.reversed() {
            for location in answer.locations {
                if names[location.id] == nil { order.append(location.id) }
                if !location.name.isEmpty, !(names[location.id] ?? []).contains(location.name) {
                    names[location.id, default: []].append(location.name)
                } else if names[location.id] == nil {
                    names[location.id] = []
                }
            }
        }
        return order.sorted().map { FilterCandidate(id: $0, names: names[$0] ?? [], type: "LOCATION") }
    }
}

extension ProjectionQueries {
    /// Every category the projection ever learned (deleted ones too: a change's category is the one
    /// it was in then), with every name each had; the live ones alone for a file without a change log.
    public func categoryCandidates() throws -> [FilterCandidate] {
        var byID: [String: FilterCandidate] = [:]
        for category in try categories() {
            byID[category.id] = FilterCandidate(id: category.id, names: category.name.map { [$0] } ?? [], type: "CATEGORY")
        }
        for (id, names) in try everNamed(ofType: .category) {
            byID[id] = FilterCandidate(id: id, names: (byID[id]?.names ?? []) + names.filter { !(byID[id]?.names ?? []).contains($0) },
                                       type: "CATEGORY")
        }
        return byID.keys.sorted().compactMap { byID[$0] }
    }

    /// The category `text` names (an id, a name it has or had), or why not.
    public func resolveCategory(_ text: String) throws -> ResolvedFilter {
        try FilterResolution.resolve(text, field: "category", among: try categoryCandidates(), listing: "catledger categories")
    }

    /// Every location the projection knows (its recorded `locations`, and the ids the live catalog
    /// names), merged with `directory`'s (every name each had) when given.
    public func locationCandidates(directory: LocationDirectory? = nil) throws -> [FilterCandidate] {
        var byID = Dictionary((directory?.filterCandidates ?? []).map { ($0.id, $0) }) { a, _ in a }
        for location in try locationsAnswer().locations where byID[location.id] == nil {
            byID[location.id] = FilterCandidate(id: location.id, names: location.name == location.id ? [] : [location.name],
                                                type: "LOCATION")
        }
        return byID.keys.sorted().compactMap { byID[$0] }
    }

    /// The location `text` names (an id, a name it has or had), or why not.
    public func resolveLocation(_ text: String, directory: LocationDirectory? = nil) throws -> ResolvedFilter {
        try FilterResolution.resolve(text, field: "location", among: try locationCandidates(directory: directory),
                                     listing: "catledger locations")
    }

    /// The item `text` names (an id, a name it has or had, deleted items too), or why not; the
    /// nearest names of an unknown one are the fuzzy search's.
    public func resolveItem(_ text: String) throws -> ResolvedFilter {
        let typed = text.trimmingCharacters(in: .whitespaces)
        let matches = try everNamed(ofType: .item, matching: typed).map { FilterCandidate(id: $0.id, names: $0.names, type: "ITEM") }
        let listing = "catledger search TEXT"
        if !matches.isEmpty || typed.isEmpty { return try FilterResolution.resolve(typed, field: "item", among: matches, listing: listing) }
        var seen = Set<String>()
        let near = try searchAnswer(typed, limit: 5).hits.filter { seen.insert($0.itemID).inserted }
            .prefix(3).map { FilterCandidate(id: $0.itemID, names: [$0.itemName], type: "ITEM") }
        throw FilterValueError(field: "item", value: typed, reason: .unknown, candidates: Array(near), listing: listing)
    }
}

extension LedgerQueries {
    /// The locations the ledger recorded (ListLocations answers) and the projection names.
    public func locationCandidates(projection: ProjectionQueries?) throws -> [FilterCandidate] {
        let directory = try locationDirectory()
        return try projection?.locationCandidates(directory: directory) ?? directory.filterCandidates
    }
}
