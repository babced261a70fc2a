// CatalogIngest: turns Square responses, webhook deliveries and local edits into ledger events.
