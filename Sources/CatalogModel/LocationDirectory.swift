import SquareWire

/// The seller's locations as the ledger learned them over time: every recorded ListLocations
/// answer (`locationsObserved`), in ledger order. Answers "what was location L called at a point":
/// the name in the newest answer recorded at or before the point (ledger time; a Square-time point
/// counts too, since the answer was true when the ledger asked), or, for a point before every
/// answer naming it, the first name the ledger learned (as `CatalogNames` does for objects).
/// Pure; a value.
public struct LocationDirectory: Sendable, Hashable {
    public struct Answer: Sendable, Hashable {
        public var sequence: UInt64
        public var recordedAt: Int64
        public var locations: [SquareLocation]
    }

    public private(set) var answers: [Answer] = []

    public init() {}

    /// The `locationsObserved` events among `events` (others are ignored), in sequence order.
    public init(events: some Sequence<LedgerEvent>) {
        for event in events { add(event) }
    }

    public mutating func add(_ event: LedgerEvent) {
        guard case .locationsObserved(let observed) = event.body else { return }
        answers.append(Answer(sequence: event.sequence, recordedAt: event.recordedAt, locations: observed.locations))
        if answers.count > 1, answers[answers.count - 2].sequence > event.sequence {
            answers.sort { $0.sequence < $1.sequence }
        }
    }

    /// The newest answer (what the ledger believes now), nil when none was recorded.
    public var latest: Answer? { answers.last }

    /// Each known location's name at `point`; a location whose every answer shows no name is left out.
    public func names(asOf point: AsOf = .latest) -> [String: String] {
        let limit = [point.ledgerTimeMax, point.squareTimeMax].compactMap { $0 }.min()
        var names: [String: String] = [:]
        var first: [String: String] = [:]
        for answer in answers {
            let admitted = limit.map { answer.recordedAt <= $0 } ?? true
            for location in answer.locations where !location.name.isEmpty {
                if first[location.id] == nil { first[location.id] = location.name }
                if admitted { names[location.id] = location.name }
            }
        }
        return first.merging(names) { _, admitted in admitted }
    }
}
