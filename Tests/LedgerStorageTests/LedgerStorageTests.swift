// Tests for LedgerStorage.
