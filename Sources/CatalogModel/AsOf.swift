import SquareWire

/// A point in the two clocks: Square time (`updated_at`) and ledger time (`recordedAt`), both
/// nanoseconds since the epoch. nil means "no limit". A state folded with a filter answers
/// "what did the ledger know by ledger time K about the catalog as of Square time T".
public struct AsOf: Sendable, Hashable, Codable, CustomStringConvertible {
    public var squareTimeMax: Int64?
    public var ledgerTimeMax: Int64?

    public init(squareTimeMax: Int64? = nil, ledgerTimeMax: Int64? = nil) {
        self.squareTimeMax = squareTimeMax
        self.ledgerTimeMax = ledgerTimeMax
    }

    public static let latest = AsOf()

    /// True when `event` contributes to a state as of this point. Non-fact events (sync
    /// bookkeeping, webhooks, edits) never change the state and are admitted or not by
    /// ledger time only.
    @inline(__always)
    public func admits(_ event: LedgerEvent) -> Bool {
        if let k = ledgerTimeMax, event.recordedAt > k { return false }
        if let t = squareTimeMax, let header = event.header, header.updatedAtNanos > t { return false }
        return true
    }

    /// True when the fact (first learned at `firstRecordedAt`) is part of a state as of this point
    /// (a fact of the log, or a `NamedFact` of the projection).
    @inlinable
    public func admits(_ fact: some NameableFact) -> Bool {
        if let k = ledgerTimeMax, fact.firstRecordedAt > k { return false }
        if let t = squareTimeMax, fact.header.updatedAtNanos > t { return false }
        return true
    }

    public var description: String {
        let t = squareTimeMax.map { RFC3339.format(nanoseconds: $0) } ?? "latest"
        let k = ledgerTimeMax.map { RFC3339.format(nanoseconds: $0) } ?? "latest"
        return "square time \(t), ledger time \(k)"
    }
}
