import CatalogModel
import CatalogProjections
import SquareWire

/// A question a projection file cannot answer, with what it lacks and how to get the answer.
public struct ProjectionFileError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var hint: String
    public var description: String { message }
}

/// The ledger's answers read from a projection file (`--db FILE`: the live projection, or a replay
/// of a point written by `catledger replay`) instead of the log: history, prices, an object, a diff
/// and a diagnosis, each the answer `LedgerQueries` gives, made by the same code (`HistoryAnswer`,
/// `PricesAnswer`, `ObjectAsOf`, `DiffAnswer`, `DiagnosisAnswer` over `CatalogHistory` and
/// `CatalogState`) from the facts the file keeps: its change log (every fact its point admits, with
/// its own fields) and its catalog rows (each object's fact in force at its point).
///
/// A file knows nothing after its point: a question about a later moment is refused
/// (`ProjectionFileError`), never answered from less. Location names come from the file's
/// `locations` (names at its point) unless the caller gives the ledger's recorded answers
/// (`locationDirectory`), which name each row's location as of its own time, as the log's answers do.
public struct ProjectionLedger: Sendable {
    public let projection: ProjectionQueries
    /// What the file describes: the live projection, or a replay and its point.
    public let file: ProjectionPoint
    /// The file's path, for messages.
    public let path: String
    public var locationDirectory: LocationDirectory?

    public init(_ projection: ProjectionQueries, path: String, locationDirectory: LocationDirectory? = nil) throws {
        self.projection = projection
        self.path = path
        self.locationDirectory = locationDirectory
        file = try projection.projectionPoint()
    }

    /// The file's point in words: "the live projection" or "a replay as of square time ..., ledger time ...".
    public var what: String {
        file.kind == .live ? "the live projection" : "a replay as of \(file.point)"
    }

    /// Whether the file holds the catalog as of `point`: the live projection holds every point (up
    /// to the events it applied); a replay every point at or before its own in both clocks.
    public func holds(_ point: AsOf) -> Bool {
        func within(_ asked: Int64?, _ limit: Int64?) -> Bool {
            guard let limit else { return true }
            return asked.map { $0 <= limit } ?? false
        }
        return within(point.squareTimeMax, file.point.squareTimeMax) && within(point.ledgerTimeMax, file.point.ledgerTimeMax)
    }

    /// Refuses a point after the file's.
    func require(_ point: AsOf) throws {
        guard !holds(point) else { return }
        throw ProjectionFileError(
            message: "\(path) is \(what); it knows nothing after that, so it cannot answer as of \(point)",
            hint: "ask for a moment at or before the file's, replay a later one (`catledger replay --at T --out FILE`), "
                + "or drop --db to read the ledger")
    }

    /// Every fact of the file's change log, as one history.
    func history() throws -> CatalogHistory {
        guard try projection.keepsChangeLog() else {
            throw ProjectionFileError(
                message: "\(path) keeps no change log (a replay written before replays kept one), so it cannot tell an object's versions",
                hint: "write it again with `catledger replay --at T --out \(path)`, or drop --db to read the ledger")
        }
        return CatalogHistory(events: try projection.changeLogEvents())
    }

    /// The names of `ids` in `history` as of `point`, with the location names.
    func names(_ history: CatalogHistory, _ ids: [CatalogObjectID], asOf point: AsOf = .latest) throws -> CatalogNames {
        var locations = CatalogNames(locations: try locationDirectory?.names(asOf: point) ?? projection.locationNames())
        locations.locationDirectory = locationDirectory
        return CatalogNames(history: history, ids: ids, asOf: point).merging(locations)
    }

    // MARK: Answers

    /// `LedgerQueries.history(of:filter:)` from the file: the versions its point admits.
    public func history(of id: CatalogObjectID, filter: HistoryFilter = HistoryFilter()) throws -> HistoryAnswer? {
        let history = try history()
        let authors = try projection.editAuthors()
        return try HistoryAnswer(of: id, filter: filter, history: history, authors: { ids in
            Dictionary(ids.compactMap { id in authors[id].map { (id, EditAuthor(actor: $0.actor, device: $0.device)) } }) { a, _ in a }
        }, names: { try names(history, $0) })
    }

    /// `LedgerQueries.prices(_:sinceNanos:untilNanos:)` from the file: the changes its point admits.
    public func prices(_ subject: PriceSubject, sinceNanos: Int64? = nil, untilNanos: Int64? = nil) throws -> PricesAnswer? {
        let history = try history()
        return try PricesAnswer(subject, sinceNanos: sinceNanos, untilNanos: untilNanos, changes: { subject in
            switch subject {
            case .object(let id): history.facts(of: id).isEmpty ? nil : history.priceHistory(of: id)
            case .item(let id): history.facts(of: id).isEmpty ? nil : history.priceHistory(ofItem: id)
            case .sku(let sku): history.priceHistory(ofSKU: sku)
            }
        }, names: { try names(history, $0) })
    }

    /// `LedgerQueries.object(_:asOf:)` at the file's point (its catalog rows: each fact as learned,
    /// a parent's nested array rebuilt from its children's rows).
    public func object(_ id: CatalogObjectID) throws -> ObjectAsOf? {
        ObjectAsOf(id, in: CatalogState.fold(try projection.objectEvents(around: id.rawValue), filter: file.point), point: file.point)
    }

    /// `LedgerQueries.diff(from:to:filter:)` between two points the file holds.
    public func diff(from: AsOf, to: AsOf, filter: DiffFilter) throws -> DiffAnswer {
        try require(from)
        try require(to)
        let history = try history()
        return try DiffAnswer(before: history.state(asOf: from), after: history.state(asOf: to), from: from, to: to,
                              filter: filter, names: { try names(history, $0, asOf: $1) })
    }

    /// `LedgerQueries.diagnosis(named:)` from the file's incidents (`version_conflicts`: each
    /// diagnosed with everything the file holds through its checkpoint or point), names as of the
    /// rejection from its change log.
    public func diagnosis(named incident: String) throws -> DiagnosisAnswer? {
        guard let answer = try projection.conflictAnswers().first(where: { $0.isNamed(incident) }) else { return nil }
        let ids = DiagnosisAnswer.namedIDs(answer.diagnosis)
        let names = try projection.keepsChangeLog()
            ? try names(try history(), ids, asOf: DiagnosisAnswer.moment(answer.diagnosis)) : CatalogNames()
        return DiagnosisAnswer(incident: answer, names: names)
    }
}
