// Tests for CatalogProjections.
