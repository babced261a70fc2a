extension CatalogState {
    /// Continues from a snapshot under a (possibly narrower) filter. Every fact of `snapshot` must be
    /// admitted by `filter` (the caller picks a snapshot whose greatest ledger and Square times are
    /// within it); then folding the events after the snapshot with `filter` equals folding everything.
    public init(restoring snapshot: CatalogState, filter: AsOf) {
        // trap-safe: snapshots are written from unfiltered states; LedgerReader restores only those
        precondition(snapshot.filter == .latest || snapshot.filter == filter,
                     "a snapshot is restored from an unfiltered state")
        if let t = filter.squareTimeMax {
            // trap-safe: LedgerReader restores only a snapshot whose recorded greatest Square time (computed from these facts when it was written, in its checked file) the point admits
            precondition(snapshot.objects.values.allSatisfy { $0.header.updatedAtNanos <= t },
                         "the snapshot holds facts after the Square time asked")
        }
        self.init(filter: filter, objects: snapshot.objects, highestSequence: snapshot.highestSequence)
    }
}
