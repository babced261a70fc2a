// CatalogSearch: the fuzzy, ranked, typo-tolerant search index (SQLite FTS5 via GRDB).
