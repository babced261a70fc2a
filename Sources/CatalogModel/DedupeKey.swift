import Crypto

/// Dedupe keys. The ledger drops an event whose key it has already stored, so a key names a
/// fact, not a delivery: the same object version with the same bytes, the same webhook
/// `event_id`, the same edit idempotency key, the same page of the same sync run.
public enum DedupeKey {
    public static func sha256Hex(_ bytes: [UInt8]) -> String {
        hex(Array(SHA256.hash(data: bytes)))
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `obs:<id>:<version>:<sha256 of payload>`
    public static func observation(id: CatalogObjectID, version: Int64, payload: [UInt8]) -> String {
        "obs:\(id.rawValue):\(version):\(sha256Hex(payload))"
    }

    /// `del:<id>:<version>`
    public static func deletion(id: CatalogObjectID, version: Int64) -> String {
        "del:\(id.rawValue):\(version)"
    }

    /// `wh:<event_id>`
    public static func webhook(eventID: String) -> String { "wh:\(eventID)" }

    /// `<kind>:<idempotency key>` for edits and their outcomes.
    public static func edit(kind: EventKind, idempotencyKey: String) -> String {
        "\(kind):\(idempotencyKey)"
    }

    /// `sync:<run id>:start`, `sync:<run id>:page:<n>`, `sync:<run id>:done`.
    public static func syncStarted(runID: String) -> String { "sync:\(runID):start" }
    public static func syncPage(runID: String, page: UInt32) -> String { "sync:\(runID):page:\(page)" }
    public static func syncCompleted(runID: String) -> String { "sync:\(runID):done" }

    /// `locations:<correlation id>`: one recorded ListLocations answer per sync run (or call); an
    /// unchanged answer is not recorded at all (`LocationsObservation.saysTheSame(as:)`).
    public static func locations(correlationID: String) -> String { "locations:\(correlationID)" }
}
