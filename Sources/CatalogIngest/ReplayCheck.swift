import CatalogLedger
import CatalogModel
import SquareAPI
import SquareWire

/// What `check-replay` found: the ledger's catalog as of Square time T compared object by object
/// with Square's own answer for the catalog version in force at T.
public struct ReplayCheckReport: Sendable, Hashable, Encodable {
    public struct ObjectRef: Sendable, Hashable, Encodable {
        public var id: String
        public var type: String
        public var version: Int64?
    }

    public struct Mismatch: Sendable, Hashable, Encodable {
        public var id: String
        public var type: String
        public var ledgerVersion: Int64
        public var squareVersion: Int64?
        /// Ledger value -> Square's value, field by field (nested children included).
        public var differences: [FieldChange]

        enum CodingKeys: String, CodingKey {
            case id, type, differences
            case ledgerVersion = "ledger_version"
            case squareVersion = "square_version"
        }
    }

    /// The Square time asked (RFC 3339) and the catalog version sent to Square for it.
    public var at: String
    public var catalogVersion: Int64
    /// The ledger time limit of the replay, when one was given.
    public var asKnownAt: String?
    /// Objects compared: top-level objects (an item with its variations counts once).
    public var compared: Int
    public var matches: Int
    public var mismatches: [Mismatch]
    /// Objects Square had at that version that the ledger's replay lacks.
    public var neverSeen: [ObjectRef]
    /// Objects live in the ledger's replay that Square did not have at that version.
    public var ledgerOnly: [ObjectRef]
    /// True when only a sample of the ledger's objects was compared (objects the ledger never
    /// saw cannot be found then).
    public var sampled: Bool

    public var ok: Bool { mismatches.isEmpty && neverSeen.isEmpty && ledgerOnly.isEmpty }

    enum CodingKeys: String, CodingKey {
        case at, compared, matches, mismatches, sampled, ok
        case catalogVersion = "catalog_version"
        case asKnownAt = "as_known_at"
        case neverSeen = "never_seen"
        case ledgerOnly = "ledger_only"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(at, forKey: .at)
        try container.encode(catalogVersion, forKey: .catalogVersion)
        try container.encodeIfPresent(asKnownAt, forKey: .asKnownAt)
        try container.encode(compared, forKey: .compared)
        try container.encode(matches, forKey: .matches)
        try container.encode(mismatches, forKey: .mismatches)
        try container.encode(neverSeen, forKey: .neverSeen)
        try container.encode(ledgerOnly, forKey: .ledgerOnly)
        try container.encode(sampled, forKey: .sampled)
        try container.encode(ok, forKey: .ok)
    }
}

/// Checks a replay against Square itself. Square keeps past states and answers `list` and
/// `batch-retrieve` for a `catalog_version`; catalog versions are Square's clock in milliseconds,
/// so the version in force at T is T in whole milliseconds. The ledger side is the same as-of
/// answer `show --at`, the read API and replay files give (`CatalogState.materializedPayloads`).
public enum ReplayCheck {
    /// The catalog version in force at Square time `nanoseconds`.
    public static func catalogVersion(atNanoseconds nanoseconds: Int64) -> Int64 {
        nanoseconds >= 0 ? nanoseconds / 1_000_000 : -((-nanoseconds + 999_999) / 1_000_000)
    }

    /// Replays the ledger to Square time `at` (as known at `asKnownAt`, if given) and compares it
    /// with Square's catalog at the version in force then: every top-level object (`list`), or,
    /// with `sample`, that many of the ledger's objects chosen with `seed` (`batch-retrieve`).
    public static func run(reader: LedgerReader, client: SquareCatalogClient, at: Int64, asKnownAt: Int64? = nil,
                           sample: Int? = nil, seed: UInt64 = 1) async throws -> ReplayCheckReport {
        let point = AsOf(squareTimeMax: at, ledgerTimeMax: asKnownAt)
        let state = try reader.state(asOf: point).state
        let version = catalogVersion(atNanoseconds: at)
        var squareObjects: [CatalogObjectEnvelope] = []
        var ledgerIDs: [CatalogObjectID]?
        if let sample {
            // A repeatable choice for a seed: the objects whose hash with the seed sorts first.
            let chosen = Array(topLevelLiveIDs(of: state)
                .map { (DedupeKey.sha256Hex(Array("\(seed):\($0.rawValue)".utf8)), $0) }
                .sorted { $0.0 < $1.0 }.prefix(sample).map(\.1))
            ledgerIDs = chosen
            for start in stride(from: 0, to: chosen.count, by: 1000) {
                let ids = chosen[start..<min(start + 1000, chosen.count)].map(\.rawValue)
                let page = try await client.batchRetrieve(objectIDs: ids, catalogVersion: version)
                squareObjects += page.objects.filter { !$0.isDeleted }
            }
        } else {
            for try await page in client.list(catalogVersion: version) {
                squareObjects += page.objects.filter { !$0.isDeleted }
            }
        }
        var report = compare(state: state, squareObjects: squareObjects, only: ledgerIDs)
        report.at = RFC3339.format(nanoseconds: at)
        report.catalogVersion = version
        report.asKnownAt = asKnownAt.map { RFC3339.format(nanoseconds: $0) }
        return report
    }

    /// Compares a state with Square's objects (top-level objects as the client read them). With
    /// `only`, just those ledger objects are expected. Pure.
    public static func compare(state: CatalogState, squareObjects: [CatalogObjectEnvelope],
                               only: [CatalogObjectID]? = nil) -> ReplayCheckReport {
        var report = ReplayCheckReport(at: "", catalogVersion: 0, asKnownAt: nil, compared: 0, matches: 0, mismatches: [],
                                       neverSeen: [], ledgerOnly: [], sampled: only != nil)
        let payloads = state.materializedPayloads()
        var expected = Set(only ?? topLevelLiveIDs(of: state))
        for envelope in squareObjects {
            guard let square = try? CatalogObject(envelope: envelope) else { continue }
            report.compared += 1
            guard let fact = state[square.id], !fact.header.isDeleted, let payload = payloads[square.id], !payload.isEmpty else {
                report.neverSeen.append(.init(id: square.id.rawValue, type: square.type.rawValue, version: square.version))
                continue
            }
            expected.remove(square.id)
            let ledgerJSON = try? JSONScanner.parse(payload)
            var differences = FieldDiff.changes(from: ledgerJSON, to: square.json, ignoring: [])
            let ledgerOrder = NestedAssembly.nestedIDs(in: payload, type: square.type)
            let squareOrder = NestedAssembly.nestedIDs(in: square.rawJSON, type: square.type)
            if differences.isEmpty, ledgerOrder != squareOrder {
                differences.append(FieldChange(path: "\(NestedArray.of(parentType: square.type)?.arrayKey ?? "nested") (order)",
                                               before: ledgerOrder.map(\.rawValue).joined(separator: ","),
                                               after: squareOrder.map(\.rawValue).joined(separator: ",")))
            }
            if differences.isEmpty {
                report.matches += 1
            } else {
                report.mismatches.append(.init(id: square.id.rawValue, type: square.type.rawValue,
                                               ledgerVersion: fact.header.version, squareVersion: square.version,
                                               differences: differences))
            }
        }
        for id in expected.sorted() {
            guard let fact = state[id] else { continue }
            report.compared += 1
            report.ledgerOnly.append(.init(id: id.rawValue, type: fact.header.objectType.rawValue, version: fact.header.version))
        }
        report.mismatches.sort { $0.id < $1.id }
        report.neverSeen.sort { $0.id < $1.id }
        return report
    }

    /// Live objects Square lists at the top level: everything but nested children (variations,
    /// modifiers), which come inside their parents.
    static func topLevelLiveIDs(of state: CatalogState) -> [CatalogObjectID] {
        state.liveObjects.filter { NestedArray.of(childType: $0.header.objectType) == nil && !$0.payload.isEmpty }
            .map(\.header.objectID)
    }
}
