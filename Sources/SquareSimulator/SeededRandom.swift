/// SplitMix64: a small, fast, seedable generator. Every random choice the simulator makes
/// (ids, event ids, webhook chaos, device edits) comes from one of these, so a seed replays a run.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// A Square-looking object id: 24 characters of base32.
    public mutating func catalogObjectID() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        return String((0..<24).map { _ in alphabet[Int(next() % 32)] })
    }

    /// A UUID-shaped identifier (event ids).
    public mutating func uuidString() -> String {
        let hex = Array("0123456789abcdef")
        let digits = (0..<32).map { _ in hex[Int(next() % 16)] }
        let groups = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(digits[$0]) }
        return groups.joined(separator: "-")
    }

    /// True with probability `probability`.
    public mutating func chance(_ probability: Double) -> Bool {
        probability > 0 && Double(next() >> 11) / Double(1 << 53) < probability
    }
}

/// The simulator's time source. `.manual` advances by a fixed step on every read, so runs are
/// reproducible and every read is distinct; `.system` follows the wall clock.
public enum SimulatorClock: Sendable, Hashable {
    case system
    case manual(startNanoseconds: Int64, stepNanoseconds: Int64)

    /// 2026-01-05T09:00:00Z, a Monday morning at the cafe.
    public static let deterministic = SimulatorClock.manual(
        startNanoseconds: 1_767_603_600_000_000_000, stepNanoseconds: 1_000_000_000)
}
