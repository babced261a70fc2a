// SquareAPI: a client for Square's Catalog API and webhook signature verification.
// It knows nothing of the ledger.
