// CatalogProjections: disposable SQLite views of the catalog rebuilt from the log.
