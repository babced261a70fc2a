// LedgerStorage: the segmented, LZ4-compressed, hash-chained append-only log.
// It knows bytes only: records are opaque payloads with a ledger timestamp.
// The byte format is specified in docs/FORMAT.md.
