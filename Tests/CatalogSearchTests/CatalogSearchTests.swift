// Tests for CatalogSearch.
