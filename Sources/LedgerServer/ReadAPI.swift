import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import LedgerQueries
import SquareAPI
import SquareWire

/// The JSON read API over one merchant's ledger. Each function answers one route.
enum ReadAPI {
    /// `GET /merchants/{id}/objects/{object_id}[?at=RFC3339][&as_known_at=RFC3339]`
    static func object(_ merchant: MerchantLedger, id: String, at: String?, asKnownAt: String?) throws -> JSONAnswer {
        var point = AsOf.latest
        // Times read as the CLI and the pages read them (`APITime`: `TimeExpression` in UTC).
        if let at {
            switch APITime.point(at, parameter: "at") {
            case .success(let nanos): point.squareTimeMax = nanos
            case .failure(let error): return error.answer
            }
        }
        if let asKnownAt {
            switch APITime.point(asKnownAt, parameter: "as_known_at") {
            case .success(let nanos): point.ledgerTimeMax = nanos
            case .failure(let error): return error.answer
            }
        }
        guard let answer = try merchant.queries.object(CatalogObjectID(id), asOf: point) else {
            return .error(404, "not_found", "no object \(id) as of \(point)")
        }
        return JSONAnswer(status: 200, body: try answer.json())
    }

    /// `GET /merchants/{id}/check-replay?at=RFC3339[&as_known_at=RFC3339][&sample=N][&seed=S]`: the
    /// ledger's catalog at `at` compared with Square's answer for the catalog version in force then
    /// (`ReplayCheck`, as `catledger check-replay`). 200 with the report whether or not it matched.
    static func checkReplay(_ merchant: MerchantLedger, at: String?, asKnownAt: String?, sample: String?,
                            seed: String?) async throws -> JSONAnswer {
        guard let client = merchant.syncer?.client else {
            return .error(409, "no_square", "this server has no Square connection to check against")
        }
        guard let at else { return .error(400, "bad_time", "at= is required (RFC 3339)") }
        let squareTime: Int64
        switch APITime.point(at, parameter: "at") {
        case .success(let nanos): squareTime = nanos
        case .failure(let error): return error.answer
        }
        var knownAt: Int64?
        if let asKnownAt {
            switch APITime.point(asKnownAt, parameter: "as_known_at") {
            case .success(let nanos): knownAt = nanos
            case .failure(let error): return error.answer
            }
        }
        var sampleSize: Int?
        if let sample {
            guard let size = Int(sample), (1...10_000).contains(size) else {
                return .error(400, "bad_sample", "sample=\(sample) must be a whole number from 1 to 10000")
            }
            sampleSize = size
        }
        var seedValue: UInt64 = 1
        if let seed {
            guard let value = UInt64(seed) else { return .error(400, "bad_seed", "seed=\(seed) must be a whole number") }
            seedValue = value
        }
        do {
            return .encoded(try await ReplayCheck.run(reader: merchant.ledger.reader, client: client, at: squareTime,
                                                      asKnownAt: knownAt, sample: sampleSize, seed: seedValue))
        } catch let error as SquareAPIError {
            return .error(502, "square_error", "Square did not answer: \(error.message)")
        }
    }

    /// `GET /merchants/{id}/objects/{object_id}/history`: the object's versions and its children's,
    /// with names and edit authors (`HistoryAnswer`, as `catledger history --json`).
    static func history(_ merchant: MerchantLedger, id: String) throws -> JSONAnswer {
        guard let answer = try merchant.queries.history(of: CatalogObjectID(id)) else {
            return .error(404, "not_found", "the ledger never learned object \(id)")
        }
        return .encoded(answer)
    }

    /// `GET /merchants/{id}/objects/{object_id}/prices`: a variation's (or modifier's) price history,
    /// or every variation's for an item (`PricesAnswer`, as `catledger prices --json`).
    static func prices(_ merchant: MerchantLedger, id: String) throws -> JSONAnswer {
        guard let answer = try merchant.queries.prices(of: CatalogObjectID(id)) else {
            return .error(404, "not_found", "the ledger never learned object \(id)")
        }
        return .encoded(answer)
    }

    /// `GET /merchants/{id}/conflicts`: every rejected upsert (`ConflictsAnswer`, as
    /// `catledger conflicts --json`).
    static func conflicts(_ merchant: MerchantLedger) throws -> JSONAnswer {
        .encoded(try merchant.queries.conflictsAnswer())
    }

    /// `GET /merchants/{id}/conflicts/{sequence or idempotency key}`: one diagnosis
    /// (`DiagnosisAnswer`, as `catledger diagnose --json`).
    static func conflict(_ merchant: MerchantLedger, incident: String) throws -> JSONAnswer {
        guard let answer = try merchant.queries.diagnosis(named: incident) else {
            return .error(404, "not_found", "no rejected upsert \"\(incident)\"")
        }
        return .encoded(answer)
    }
}
