import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import GRDB
import TestSupport

extension TemporaryLedger {
    func projector(_ name: String = "projections.sqlite", options: ProjectorOptions = ProjectorOptions()) throws
        -> CatalogProjector {
        try CatalogProjector(databasePath: path(name), reader: LedgerReader(layout: layout), options: options)
    }
}

/// Digests of every content table, by table name.
func digests(_ database: any DatabaseReader) throws -> [String: String] {
    try database.read { db in
        Dictionary(uniqueKeysWithValues: try ProjectionDigest.digests(db).map { ($0.table, $0.digest) })
    }
}

func digests(path: String) throws -> [String: String] {
    try digests(ProjectionQueries.open(path: path).database)
}
