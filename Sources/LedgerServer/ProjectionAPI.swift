import CatalogProjections

/// The read API over a merchant's projection (current catalog rows and search), for reads that
/// need no history. The projection may trail the ledger by the catch-up in progress.
enum ProjectionAPI {
    static func item(_ merchant: MerchantLedger, id: String) throws -> JSONAnswer {
        guard let projector = merchant.projector else { return noProjection }
        guard let item = try projector.queries.item(id: id) else { return .error(404, "not_found", "no item \(id)") }
        return .encoded(item)
    }

    static func variation(_ merchant: MerchantLedger, id: String) throws -> JSONAnswer {
        guard let projector = merchant.projector else { return noProjection }
        guard let variation = try projector.queries.variation(id: id) else {
            return .error(404, "not_found", "no variation \(id)")
        }
        return .encoded(variation)
    }

    static func search(_ merchant: MerchantLedger, text: String) throws -> JSONAnswer {
        guard let projector = merchant.projector else { return noProjection }
        guard !text.isEmpty else { return .error(400, "bad_query", "give the text to search for as ?q=") }
        return .encoded(try projector.queries.search(text))
    }

    static let noProjection = JSONAnswer.error(409, "no_projection", "projections are off on this server")
}
