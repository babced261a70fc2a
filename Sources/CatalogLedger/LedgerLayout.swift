import SystemPackage

/// Where a ledger keeps its files. One ledger directory holds one merchant's history:
///
///     <root>/log/            the append-only log (LedgerStorage; docs/FORMAT.md)
///     <root>/snapshots/      CatalogState snapshots at sequence boundaries (disposable)
///     <root>/projections.sqlite   the projection database (disposable, rebuilt from the log)
///     <root>/index/history.sqlite the per-object history index (LedgerIndex; disposable)
///     <root>/verification.json    the outcome of the last verification (`VerificationRecord`)
///     <root>/owner-epoch.json     cluster mode: the lease epoch the ledger is appended under (`LedgerOwnerEpoch`)
///
/// Everything but `log/` can be deleted and is rebuilt from the log.
public struct LedgerLayout: Sendable, Hashable {
    public let root: FilePath

    public init(root: FilePath) { self.root = root }
    public init(root: String) { self.root = FilePath(root) }

    public var logDirectory: FilePath { root.appending("log") }
    public var snapshotsDirectory: FilePath { root.appending("snapshots") }
    public var projectionsDatabase: FilePath { root.appending("projections.sqlite") }
    public var indexDirectory: FilePath { root.appending("index") }
    public var historyIndexDatabase: FilePath { indexDirectory.appending("history.sqlite") }
    public var verificationFile: FilePath { root.appending("verification.json") }
    public var ownerEpochFile: FilePath { root.appending("owner-epoch.json") }
}
