import CatalogLedger
import GRDB

extension CatalogProjector {
    /// Compares the checkpoint with the log. A projection commits without syncing and the log's
    /// readers see appends before they are synced, so after a crash either may have lost what the
    /// other kept: an older projection only catches up, but a projection holding events the log
    /// lost must be rebuilt, or it would keep them forever and skip the events that reuse their
    /// sequences.
    package func checkpointAgreement() throws -> CheckpointAgreement {
        let checkpoint = try Self.databaseCall(databasePath) {
            try database.read { db in try ProjectionWriter.logCheckpoint(in: db) }
        }
        return try Self.ledgerRead("the event at the checkpoint") { try LogCheckpoint.agreement(of: checkpoint, with: reader) }
    }
}
