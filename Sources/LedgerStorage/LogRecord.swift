// The values that cross the LedgerStorage boundary. Storage knows bytes, not events.

/// A record to append: the requested ledger time (nanoseconds since the Unix epoch) and opaque bytes.
/// The writer may raise the time to its predecessor's so ledger time never decreases.
public struct LogRecord: Sendable, Equatable {
    public var ledgerTime: Int64
    public var payload: [UInt8]

    public init(ledgerTime: Int64, payload: [UInt8]) {
        self.ledgerTime = ledgerTime
        self.payload = payload
    }
}

/// A record read back from the log.
public struct StoredRecord: Sendable, Equatable {
    public let sequence: UInt64
    public let ledgerTime: Int64
    public let payload: [UInt8]

    public init(sequence: UInt64, ledgerTime: Int64, payload: [UInt8]) {
        self.sequence = sequence
        self.ledgerTime = ledgerTime
        self.payload = payload
    }
}

/// What the writer assigned to an appended record.
public struct AppendedRecord: Sendable, Equatable {
    public let sequence: UInt64
    public let ledgerTime: Int64

    public init(sequence: UInt64, ledgerTime: Int64) {
        self.sequence = sequence
        self.ledgerTime = ledgerTime
    }
}
