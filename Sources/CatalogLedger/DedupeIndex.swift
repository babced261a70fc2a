import Crypto

/// A 128-bit digest of an event's dedupe key. Keeping digests rather than the key strings holds
/// the index at ~40 bytes an event; a false match needs a 128-bit SHA-256 prefix collision.
public struct DedupeDigest: Hashable, Sendable {
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    public init(key: String) {
        let digest = SHA256.hash(data: Array(key.utf8))
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in digest.enumerated() where index < 16 {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.init(high: high, low: low)
    }
}

/// The ledger's memory of which dedupe keys it holds and at which sequence. Not thread-safe: the
/// owning `Ledger` guards it with its lock.
struct DedupeIndex {
    private(set) var sequences: [DedupeDigest: UInt64] = [:]

    init(_ sequences: [DedupeDigest: UInt64] = [:]) { self.sequences = sequences }

    subscript(digest: DedupeDigest) -> UInt64? { sequences[digest] }

    var count: Int { sequences.count }

    /// Records the first sequence for a key; a later sighting never moves it.
    mutating func insert(_ digest: DedupeDigest, sequence: UInt64) {
        if sequences[digest] == nil { sequences[digest] = sequence }
    }
}
