// LedgerServer: the Hummingbird server (webhooks, edit API, query API, /metrics).
