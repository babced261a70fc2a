import CatalogModel
import LedgerQueries

/// A page's URL parameters that name a category or a location: an id or a name, resolved as the
/// CLI and the API resolve them (`FilterResolution`); one that names nothing (or several) is a
/// `PageInputError` the page shows, never an empty answer.
extension Pages {
    static func filterCategory(_ context: PageContext, _ text: String) throws -> CatalogObjectID {
        do {
            if let projection = context.projector?.queries { return CatalogObjectID(try projection.resolveCategory(text).id) }
            let ids = try context.queries.changeLogCategories()
            let names = try context.queries.names(of: ids)
            let candidates = ids.map { FilterCandidate(id: $0.rawValue, names: names.name(of: $0).map { [$0] } ?? [], type: "CATEGORY") }
            return CatalogObjectID(try FilterResolution.resolve(text, field: "category", among: candidates).id)
        } catch let error as FilterValueError {
            throw PageInputError(message: "Category: \(error.message) (\(error.hint))")
        }
    }

    static func filterLocation(_ context: PageContext, _ text: String) throws -> String {
        do {
            let candidates = try context.queries.locationCandidates(projection: context.projector?.queries)
            return try FilterResolution.resolve(text, field: "location", among: candidates).id
        } catch let error as FilterValueError {
            throw PageInputError(message: "Location: \(error.message) (\(error.hint))")
        }
    }
}
