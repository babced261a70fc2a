import CatalogIngest
import CatalogModel
import CatalogProjections
import Foundation
import LedgerQueries

/// The read API over a merchant's projection (current catalog rows and search), for reads that
/// need no history.
///
/// Read-your-writes: a read answers once the projection holds every event that was durable when
/// the read arrived (an edit, a report or a webhook's sync acknowledged before it), waiting for
/// the merchant's follower up to `projectionReadWait`, then answers 503 `projection_behind`. When
/// no follower runs (the service is driven without its service group), it answers from the
/// projection as it is.
enum ProjectionAPI {
    /// Waits until the projection is current, then answers `read`.
    static func current(_ merchant: MerchantLedger, within bound: Duration,
                        _ read: (CatalogProjector) throws -> JSONAnswer) async throws -> JSONAnswer {
        guard let projection = merchant.projection else { return noProjection }
        let next = merchant.ledger.nextSequence
        if next > 0, await projection.waitUntilApplied(through: next - 1, timeout: bound) == .timedOut {
            return .error(503, "projection_behind",
                          "the projection has not applied event \(next - 1) yet (applied through \(projection.applied.map(String.init) ?? "nothing"))",
                          hint: "retry shortly; the projection follows the ledger")
        }
        return try read(projection.projector)
    }

    /// `GET .../items/{id}`: the item now, from the projection, as `catledger show --json` answers it
    /// (`ObjectAsOf`: its nested variations rebuilt from theirs).
    static func item(_ projector: CatalogProjector, id: String) throws -> JSONAnswer {
        try object(projector, id: id, type: .item, noun: "item")
    }

    /// `GET .../variations/{id}`: the variation now, from the projection, in the same shape.
    static func variation(_ projector: CatalogProjector, id: String) throws -> JSONAnswer {
        try object(projector, id: id, type: .itemVariation, noun: "variation")
    }

    private static func object(_ projector: CatalogProjector, id: String, type: CatalogObjectType, noun: String) throws -> JSONAnswer {
        guard let answer = try ProjectionLedger(projector.queries, path: "the projection").object(CatalogObjectID(id)),
              answer.fact.header.objectType == type else {
            return .error(404, "not_found", "no \(noun) \(id)", hint: "GET .../objects/\(id) answers any object by its id")
        }
        return JSONAnswer(status: 200, body: try answer.json())
    }

    /// `GET .../search?q=TEXT[&limit=N][&category=ID]`: the answer of `catledger search --json`.
    static func search(_ projector: CatalogProjector, text: String, limit: String?, category: String?) throws -> JSONAnswer {
        // Bounded before any work (docs/SECURITY.md, "Request limits"): what a search costs grows with its text.
        let characters = text.unicodeScalars.count
        guard characters <= RequestLimits.searchTextCharactersMax else {
            let exceeded = RequestLimits.Exceeded(field: "q", size: characters, limit: RequestLimits.searchTextCharactersMax,
                                                  unit: "characters")
            return .error(400, "limit_exceeded", "\(exceeded)", hint: exceeded.hint)
        }
        if let category, category.utf8.count > RequestLimits.idBytesMax {
            let exceeded = RequestLimits.Exceeded(field: "category", size: category.utf8.count, limit: RequestLimits.idBytesMax,
                                                  unit: "bytes")
            return .error(400, "limit_exceeded", "\(exceeded)", hint: exceeded.hint)
        }
        guard !text.trimmingCharacters(in: .whitespaces).isEmpty else {
            return .error(400, "bad_query", "give the text to search for as ?q=")
        }
        var hits = SearchAnswer.defaultLimit
        if let limit {
            guard let value = Int(limit), (1...SearchAnswer.maximumLimit).contains(value) else {
                return .error(400, "bad_limit", "limit=\(limit) must be a whole number from 1 to \(SearchAnswer.maximumLimit)")
            }
            hits = value
        }
        // A category is an id or a name, resolved as the CLI resolves it: unknown or ambiguous is a 400, never an empty answer.
        var categoryID: String?
        if let category {
            do {
                categoryID = try projector.queries.resolveCategory(category).id
            } catch let error as FilterValueError {
                return .filterValue(error, parameter: "category")
            }
        }
        return .encoded(try projector.queries.searchAnswer(text, categoryID: categoryID, limit: hits))
    }

    static let noProjection = JSONAnswer.error(409, "no_projection", "projections are off on this server")
}
