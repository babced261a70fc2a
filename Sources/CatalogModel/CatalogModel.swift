// CatalogModel: the pure domain. Square catalog objects, ledger events, the state fold,
// diffs, price history and VERSION_MISMATCH diagnosis. No I/O lives here.
