// Tests for CatalogModel.
