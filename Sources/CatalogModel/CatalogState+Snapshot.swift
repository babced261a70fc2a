import Crypto

/// The compact snapshot encoding and the content digest of a `CatalogState`.
///
///     snapshot = version:u8(=1) flags:u8 [squareTimeMax:i64 if flags&1] [ledgerTimeMax:i64 if flags&2]
///                [highestSequence:u64 if flags&4] count (fact)*   (facts sorted by object id)
///     fact     = header (as in EventCodec) payload:bytes dedupeKey:str firstSequence:u64
///                firstRecordedAt:i64 source:u8
extension CatalogState {
    public static let snapshotFormatVersion: UInt8 = 1

    public func encodedSnapshot() -> [UInt8] {
        var w = ByteWriter(capacity: 64 + objects.count * 256)
        w.byte(Self.snapshotFormatVersion)
        let flags: UInt8 = (filter.squareTimeMax != nil ? 1 : 0) | (filter.ledgerTimeMax != nil ? 2 : 0)
            | (highestSequence != nil ? 4 : 0)
        w.byte(flags)
        if let t = filter.squareTimeMax { w.zigzag(t) }
        if let k = filter.ledgerTimeMax { w.zigzag(k) }
        if let s = highestSequence { w.varint(s) }
        w.varint(UInt64(objects.count))
        for id in objects.keys.sorted() {
            // trap-safe: id iterates objects.keys
            let fact = objects[id]!
            EventCodec.writeHeader(fact.header, &w)
            w.data(fact.payload)
            w.string(fact.dedupeKey)
            w.varint(fact.firstSequence)
            w.zigzag(fact.firstRecordedAt)
            w.byte(fact.source.rawValue)
        }
        return w.bytes
    }

    public init(snapshot: [UInt8]) throws {
        var r = ByteReader(snapshot, context: "snapshot")
        let version = try r.byte()
        guard version == Self.snapshotFormatVersion else {
            throw CatalogModelError(.unsupportedFormatVersion, "snapshot format version \(version) is not supported",
                                    location: "snapshot byte 0")
        }
        let flags = try r.byte()
        guard flags & ~7 == 0 else { throw r.malformed("unknown snapshot flags") }
        let filter = AsOf(squareTimeMax: flags & 1 != 0 ? try r.zigzag() : nil,
                          ledgerTimeMax: flags & 2 != 0 ? try r.zigzag() : nil)
        let highest: UInt64? = flags & 4 != 0 ? try r.varint() : nil
        let count = try r.varint()
        var objects: [CatalogObjectID: ObjectFact] = [:]
        for _ in 0..<count {
            let header = try EventCodec.readHeader(&r).header
            let payload = try r.data()
            let key = try r.string()
            let sequence = try r.varint()
            let recordedAt = try r.zigzag()
            guard let source = EventSource(rawValue: try r.byte()) else { throw r.malformed("unknown source") }
            objects[header.objectID] = ObjectFact(header: header, payload: payload, dedupeKey: key,
                                                  firstSequence: sequence, firstRecordedAt: recordedAt, source: source)
        }
        guard r.isAtEnd else { throw r.malformed("trailing bytes after snapshot") }
        self.init(filter: filter, objects: objects, highestSequence: highest)
    }

    /// SHA-256 over the canonical form of the catalog content: per object (sorted by id) the
    /// header and the dedupe key (which carries the payload hash). When and from where a fact
    /// was learned is not content, so rebuilds and re-orderings of the same facts agree.
    public var contentDigest: [UInt8] {
        var hasher = SHA256()
        for id in objects.keys.sorted() {
            var w = ByteWriter(capacity: 160)
            // trap-safe: id iterates objects.keys
            let fact = objects[id]!
            EventCodec.writeHeader(fact.header, &w)
            w.string(fact.dedupeKey)
            hasher.update(data: w.bytes)
        }
        return Array(hasher.finalize())
    }

    public var contentDigestHex: String { DedupeKey.hex(contentDigest) }
}
