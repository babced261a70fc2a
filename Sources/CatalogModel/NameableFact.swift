import SquareWire

/// What naming an object needs of one of its facts (the rule is `CatalogNames`, LedgerQueries): its
/// header (type, version, parent, Square time), its first learning, whether it carries JSON, and its
/// own name. A fact of the log is one; so is a row of the projection's change log (`NamedFact`),
/// which keeps the name `ownName(of:)` read from the fact when it was learned.
public protocol NameableFact: Sendable {
    var header: CatalogFactHeader { get }
    var firstSequence: UInt64 { get }
    var firstRecordedAt: Int64 { get }
    /// False for a tombstone learned without JSON.
    var hasPayload: Bool { get }
    /// `<type>_data.name`, an image's caption when it has no name; nil without one.
    var ownName: String? { get }
}

extension ObjectFact: NameableFact {
    public var hasPayload: Bool { !payload.isEmpty }
    public var ownName: String? { Self.ownName(of: self) }

    /// `<type>_data.name` of a fact's payload, read by span (not the whole tree); an image without
    /// a name shows its caption (Square's image objects are usually captioned, seldom named).
    public static func ownName(of fact: ObjectFact) -> String? {
        let payload = fact.payload
        guard let whole = try? JSONScanner.valueSpan(payload),
              let data = try? JSONScanner.member(fact.header.objectType.dataKey, payload, span: whole) else { return nil }
        let keys = fact.header.objectType == .image ? ["name", "caption"] : ["name"]
        for key in keys {
            if let span = try? JSONScanner.member(key, payload, span: data),
               let text = (try? JSONScanner.parse(payload, span: span))?.stringValue, !text.isEmpty { return text }
        }
        return nil
    }
}

/// A fact as naming needs it, without its JSON (the projection's `change_log` row and its `own_name`).
public struct NamedFact: NameableFact, Sendable, Hashable {
    public var header: CatalogFactHeader
    public var firstSequence: UInt64
    public var firstRecordedAt: Int64
    public var hasPayload: Bool
    public var ownName: String?

    public init(header: CatalogFactHeader, firstSequence: UInt64, firstRecordedAt: Int64, hasPayload: Bool, ownName: String?) {
        self.header = header
        self.firstSequence = firstSequence
        self.firstRecordedAt = firstRecordedAt
        self.hasPayload = hasPayload
        self.ownName = ownName
    }
}
