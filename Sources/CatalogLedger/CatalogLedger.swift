// CatalogLedger: the event store. Encodes CatalogModel events onto LedgerStorage records,
// deduplicates, reads by sequence or time, keeps snapshots and answers as-of queries.
