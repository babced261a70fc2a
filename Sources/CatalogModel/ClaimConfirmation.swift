// Versions the ledger was told Square gave an object, checked against what Square itself showed.
//
// An accepted write (the server's own edit, or an app's report of a write it made itself) names the
// versions Square answered with. A report is the app's claim: it is recorded and diagnosed, but only
// what Square shows (a sync, a retrieve) becomes the catalog's state (issue 42). A claimed version
// that no later observation from Square reaches, though a sync ran after the claim, is one Square
// never confirmed: a forged or mistaken report, or a write Square lost. `catledger verify` and the
// health page list them. A claim with no completed sync after it is not judged yet.

/// One version a write said Square gave an object, and what Square showed of it since.
public struct UnconfirmedClaim: Sendable, Hashable {
    public var objectID: CatalogObjectID
    /// The version the write's answer named.
    public var claimedVersion: Int64
    /// The outcome event (`upsertAccepted` or `writeAccepted`) that named it.
    public var sequence: UInt64
    public var idempotencyKey: String
    /// The highest version Square showed of the object after the claim; nil when none.
    public var squareVersion: Int64?

    /// One line for people (`verify`, the health page).
    public var line: String {
        "\(objectID.rawValue) v\(claimedVersion) (event \(sequence), key \(idempotencyKey)); Square shows "
            + (squareVersion.map { "v\($0)" } ?? "no version")
    }
}

/// Reads a log in order and keeps the claims Square has not confirmed. Not thread-safe.
public struct ClaimConfirmation: Sendable {
    struct Claim: Sendable {
        var version: Int64
        var sequence: UInt64
        var key: String
    }

    private var pending: [CatalogObjectID: [Claim]] = [:]
    private var shown: [CatalogObjectID: Int64] = [:]
    private var runStarts: [String: UInt64] = [:]
    /// Claims before this sequence had a complete sync after them.
    private var judgedBefore: UInt64 = 0

    public init() {}

    public mutating func add(_ event: LedgerEvent) {
        switch event.body {
        case .upsertAccepted(let accepted):
            for version in accepted.newVersions {
                claim(version, sequence: event.sequence, key: accepted.idempotencyKey)
            }
        case .writeAccepted(let accepted):
            for version in accepted.movedVersions {
                claim(version, sequence: event.sequence, key: accepted.idempotencyKey)
            }
        case .objectObserved, .objectDeleted:
            // Any observation is Square's word: a report's bodies are not recorded as observations
            // (SafeEditor.report), so what is observed came from a sync, a retrieve, a webhook or the
            // server's own exchange with Square. (A ledger written before that holds a report's
            // objects as observations: its claims count as confirmed by them.) The ledger keeps one
            // observation of a version, so a sync re-reading an edit's version appends nothing.
            guard let header = event.body.header else { return }
            let id = header.objectID
            shown[id] = max(shown[id] ?? .min, header.version)
            if var claims = pending[id] {
                claims.removeAll { $0.version <= header.version }
                pending[id] = claims.isEmpty ? nil : claims
            }
        case .syncStarted(let start):
            runStarts[start.runID] = event.sequence
        case .syncCompleted(let completion):
            if let started = runStarts.removeValue(forKey: completion.runID) { judgedBefore = max(judgedBefore, started) }
        default:
            break
        }
    }

    private mutating func claim(_ version: ObjectVersion, sequence: UInt64, key: String) {
        // A version Square already showed (or passed) is confirmed as it is named.
        if let seen = shown[version.objectID], seen >= version.version { return }
        pending[version.objectID, default: []].append(Claim(version: version.version, sequence: sequence, key: key))
    }

    /// The claims a completed sync ran after and no observation from Square reached, in log order.
    public var unconfirmed: [UnconfirmedClaim] {
        pending.flatMap { id, claims in
            claims.filter { $0.sequence < judgedBefore }.map {
                UnconfirmedClaim(objectID: id, claimedVersion: $0.version, sequence: $0.sequence, idempotencyKey: $0.key,
                                 squareVersion: shown[id])
            }
        }.sorted { ($0.sequence, $0.objectID.rawValue) < ($1.sequence, $1.objectID.rawValue) }
    }

    /// The unconfirmed claims of `events`.
    public static func unconfirmed<S: Sequence>(in events: S) -> [UnconfirmedClaim] where S.Element == LedgerEvent {
        var check = ClaimConfirmation()
        for event in events { check.add(event) }
        return check.unconfirmed
    }
}
