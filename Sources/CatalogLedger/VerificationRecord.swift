import CatalogModel
import Foundation
import LedgerStorage
import SquareWire

/// The outcome of the last verification of a ledger, kept in `<root>/verification.json` so that
/// commands and the server that read from projections (which do not read the log's bytes) can say
/// that the ledger failed it. Written by `catledger verify` (a full check), by `catledger repair`
/// (a full check after the cut) and by the server's nightly job (the cheap check of sealed segments,
/// `LogVerifier.verifySealedSegments`). A missing file means no verification has run yet.
///
/// The file is small JSON, replaced atomically (written beside, then renamed):
/// `{"checked_at":"2026-11-24T03:30:02Z","ok":false,"problem_count":1,"problems":["…"],"scope":"full"}`.
public struct VerificationRecord: Sendable, Codable, Equatable {
    public enum Scope: String, Sendable, Codable {
        /// Every segment, record and event (`catledger verify`).
        case full
        /// The sealed segments' CRCs, hash chain, footers and manifest (the nightly job).
        case sealedSegments = "sealed_segments"
        /// The full check `catledger repair` runs after cutting the log.
        case repair
    }

    /// At most this many problems are kept; `problemCount` has them all.
    public static let problemsKept = 20

    public var ok: Bool
    /// RFC 3339, UTC.
    public var checkedAt: String
    public var scope: Scope
    public var problemCount: Int
    /// The first problems, each with its location.
    public var problems: [String]
    /// Versions an accepted write named that Square never showed though a sync ran after it
    /// (`ClaimConfirmation`, the full check only): flagged, not problems. nil in older records.
    public var unconfirmedClaimCount: Int?
    /// The first of them, each as one line.
    public var unconfirmedClaims: [String]?

    public init(scope: Scope, problems: [String], checkedAt: Date = Date()) {
        self.ok = problems.isEmpty
        self.checkedAt = RFC3339.format(nanoseconds: Int64(checkedAt.timeIntervalSince1970 * 1e9))
        self.scope = scope
        self.problemCount = problems.count
        self.problems = Array(problems.prefix(Self.problemsKept))
    }

    /// The record of a storage verification (plus any further problems, such as undecodable events).
    public init(scope: Scope, report: VerifyReport, extraProblems: [String] = [], checkedAt: Date = Date()) {
        self.init(scope: scope, problems: report.problems.map(\.description) + extraProblems, checkedAt: checkedAt)
    }

    enum CodingKeys: String, CodingKey {
        case ok, scope, problems
        case checkedAt = "checked_at"
        case problemCount = "problem_count"
        case unconfirmedClaimCount = "unconfirmed_claim_count"
        case unconfirmedClaims = "unconfirmed_claims"
    }

    /// This record with the claims Square never confirmed (each described in one line).
    public func flagging(unconfirmed lines: [String]) -> VerificationRecord {
        guard !lines.isEmpty else { return self }
        var record = self
        record.unconfirmedClaimCount = lines.count
        record.unconfirmedClaims = Array(lines.prefix(Self.problemsKept))
        return record
    }

    /// The last record of the ledger at `layout`, or nil when none was written (or it cannot be read).
    public static func load(layout: LedgerLayout) -> VerificationRecord? {
        guard let data = FileManager.default.contents(atPath: layout.verificationFile.string) else { return nil }
        return try? JSONDecoder().decode(VerificationRecord.self, from: data)
    }

    /// Replaces the ledger's record atomically.
    public func save(layout: LedgerLayout) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(self) + Data("\n".utf8)
        try data.write(to: URL(fileURLWithPath: layout.verificationFile.string), options: .atomic)
    }

    /// One line for people: when and what the last verification found.
    public var summary: String {
        let first = problems.first.map { ": \($0)" } ?? ""
        return "the ledger failed its last verification (\(scope.rawValue), \(checkedAt)): \(problemCount) problem(s)\(first)"
    }
}

extension Ledger {
    /// The cheap check of the sealed segments (`LogVerifier.verifySealedSegments`), run while appends
    /// continue, recorded as the ledger's last verification. Holds the compaction gate, so it never
    /// reads a run a compaction is replacing; throws `LedgerError.compactionInProgress` while one runs.
    @discardableResult
    public func verifySealedSegments() throws -> VerificationRecord {
        guard compactionGate.enter() else { throw LedgerError.compactionInProgress(layout.root.string) }
        defer { compactionGate.leave() }
        let record = VerificationRecord(scope: .sealedSegments,
                                        report: LogVerifier.verifySealedSegments(directory: layout.logDirectory))
        try record.save(layout: layout)
        return record
    }
}
