// Tests for CatalogLedger.
