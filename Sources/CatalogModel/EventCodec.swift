import SquareWire

/// The binary encoding of an event's record payload. Sequence and ledger time live in the
/// storage record, not here.
///
/// Format version 1 (all integers LEB128 varints; Int64 zigzag-encoded; `str` and `bytes` are a
/// varint length then the bytes; `opt<x>` is a byte 0 (absent) or 1 followed by x):
///
///     payload  = formatVersion:u8(=1) kind:u8 merchant:str source:u8 dedupeKey:str correlation:str body
///     header   = type:str id:str version:i64 updatedAtNanos:i64 updatedAt:str flags:u8 [parent:str if flags&2]
///                (flags bit 0: is_deleted, bit 1: has parent, bit 2: has Square-Version (observed only);
///                any other bit is refused)
///     observed = header payload:bytes [squareVersion:str if header flags&4]
///     deleted  = header opt<cascadedFrom:str>
///     webhook  = eventID:str eventType:str count (name:str value:str)* verdict:u8 body:bytes
///     syncStarted   = runID:str mode:u8 opt<beginTime:str>
///     syncPage      = runID:str page:u32 opt<cursor:str> objects:u32 related:u32
///     syncCompleted = runID:str mode:u8 opt<beginTime:str> opt<latestTime:str> pages:u32 objects:u32
///     versions = count (id:str version:i64)*
///     edit     = actor:str device:str count id:str* versions request:bytes idempotencyKey:str
///     accepted = idempotencyKey:str versions count (client:str object:str)* response:bytes
///     rejected = idempotencyKey:str status:u16 errorBody:bytes count bytes*
///     written  = call:str idempotencyKey:str versions updatedAt:str response:bytes
///     locations = count (id:str name:str status:str)* response:bytes
///     compaction = throughSequence:u64 digest:bytes
///     retained = type:str id:str baseDedupeKey:str baseSequence:u64 count parent:str* count change*
///     change   = scope:u8 opt<location:str> opt<before:str> opt<after:str> opt<money> opt<money> version:i64
///                updatedAtNanos:i64 updatedAt:str firstRecordedAt:i64 firstSequence:u64 source:u8 opt<sku:str>
///     money    = amount:i64 currency:str
///
/// A payload must be consumed exactly; trailing bytes are an error. New kinds take new kind
/// numbers; a change to an existing body takes a new format version, or, for an optional field
/// that old events lack, a header flag bit that earlier builds refuse ("unknown header flags")
/// and this build reads as absent when clear (bit 2, the Square-Version of an observation).
public enum EventCodec {
    public static let formatVersion: UInt8 = 1

    public static func encode(_ event: PendingEvent) -> [UInt8] {
        var w = ByteWriter(capacity: 96 + estimatedBodySize(event.body))
        w.byte(formatVersion)
        w.byte(event.kind.rawValue)
        w.string(event.merchantID.rawValue)
        w.byte(event.source.rawValue)
        w.string(event.dedupeKey)
        w.string(event.correlationID)
        switch event.body {
        case .objectObserved(let o):
            writeHeader(o.header, &w, extraFlags: o.squareVersion != nil ? squareVersionFlag : 0)
            w.data(o.payload)
            if let version = o.squareVersion { w.string(version) }
        case .objectDeleted(let d):
            writeHeader(d.header, &w)
            w.optionalString(d.cascadedFrom?.rawValue)
        case .webhookReceived(let r):
            w.string(r.eventID)
            w.string(r.eventType)
            w.varint(UInt64(r.headers.count))
            for h in r.headers { w.string(h.name); w.string(h.value) }
            w.byte(r.signatureVerdict.rawValue)
            w.data(r.body)
        case .syncStarted(let s):
            w.string(s.runID)
            w.byte(s.mode.rawValue)
            w.optionalString(s.beginTime)
        case .syncPageReceived(let p):
            w.string(p.runID)
            w.varint(UInt64(p.pageIndex))
            w.optionalString(p.cursor)
            w.varint(UInt64(p.objectCount))
            w.varint(UInt64(p.relatedObjectCount))
        case .syncCompleted(let c):
            w.string(c.runID)
            w.byte(c.mode.rawValue)
            w.optionalString(c.beginTime)
            w.optionalString(c.latestTime)
            w.varint(UInt64(c.pageCount))
            w.varint(UInt64(c.objectCount))
        case .localEditProposed(let e):
            w.string(e.actor)
            w.string(e.device)
            w.varint(UInt64(e.targetIDs.count))
            for id in e.targetIDs { w.string(id.rawValue) }
            writeVersions(e.baseVersions, &w)
            w.data(e.requestBody)
            w.string(e.idempotencyKey)
        case .upsertAccepted(let a):
            w.string(a.idempotencyKey)
            writeVersions(a.newVersions, &w)
            w.varint(UInt64(a.idMappings.count))
            for m in a.idMappings { w.string(m.clientObjectID.rawValue); w.string(m.objectID.rawValue) }
            w.data(a.responseBody)
        case .upsertRejected(let r):
            w.string(r.idempotencyKey)
            w.varint(UInt64(r.httpStatus))
            w.data(r.errorBody)
            w.varint(UInt64(r.followUpObjects.count))
            for object in r.followUpObjects { w.data(object) }
        case .compactionMarker(let m):
            w.varint(m.throughSequence)
            w.data(m.stateDigest)
        case .priceHistoryRetained(let retained):
            writeRetained(retained, &w)
        case .writeAccepted(let written):
            w.string(written.call)
            w.string(written.idempotencyKey)
            writeVersions(written.movedVersions, &w)
            w.string(written.updatedAt)
            w.data(written.responseBody)
        case .locationsObserved(let observed):
            w.varint(UInt64(observed.locations.count))
            for location in observed.locations {
                w.string(location.id)
                w.string(location.name)
                w.string(location.status)
            }
            w.data(observed.responseBody)
        }
        return w.bytes
    }

    public static func decode(sequence: UInt64, recordedAt: Int64, payload: [UInt8]) throws -> LedgerEvent {
        var r = ByteReader(payload, context: "event \(sequence)")
        let version = try r.byte()
        guard version == formatVersion else {
            throw CatalogModelError(.unsupportedFormatVersion,
                                    "event format version \(version) is not supported (this build reads \(formatVersion))",
                                    location: "event \(sequence) byte 0")
        }
        let kindByte = try r.byte()
        guard let kind = EventKind(rawValue: kindByte) else {
            throw CatalogModelError(.unknownEventKind, "unknown event kind \(kindByte)", location: "event \(sequence) byte 1")
        }
        let merchant = MerchantID(try r.string())
        let sourceByte = try r.byte()
        guard let source = EventSource(rawValue: sourceByte) else {
            throw CatalogModelError(.unknownEventSource, "unknown event source \(sourceByte)", location: "event \(sequence) byte \(r.offset - 1)")
        }
        let dedupeKey = try r.string()
        let correlationID = try r.string()
        let body: EventBody
        switch kind {
        case .objectObserved:
            let (header, flags) = try readHeader(&r, allowedExtraFlags: squareVersionFlag)
            let payload = try r.data()
            let squareVersion = flags & squareVersionFlag != 0 ? try r.string() : nil
            body = .objectObserved(ObjectObservation(header: header, payload: payload, squareVersion: squareVersion))
        case .objectDeleted:
            let header = try readHeader(&r).header
            guard header.isDeleted else { throw r.malformed("objectDeleted header is not a tombstone") }
            body = .objectDeleted(ObjectDeletion(header: header, cascadedFrom: try r.optionalString().map { CatalogObjectID($0) }))
        case .webhookReceived:
            let eventID = try r.string()
            let eventType = try r.string()
            let count = try r.varint()
            var headers: [HTTPHeader] = []
            for _ in 0..<count { headers.append(HTTPHeader(name: try r.string(), value: try r.string())) }
            guard let verdict = SignatureVerdict(rawValue: try r.byte()) else { throw r.malformed("unknown signature verdict") }
            body = .webhookReceived(WebhookReceipt(eventID: eventID, eventType: eventType, headers: headers,
                                                   signatureVerdict: verdict, body: try r.data()))
        case .syncStarted:
            let runID = try r.string()
            let mode = try readMode(&r)
            body = .syncStarted(SyncStart(runID: runID, mode: mode, beginTime: try r.optionalString()))
        case .syncPageReceived:
            body = .syncPageReceived(SyncPage(runID: try r.string(), pageIndex: try r.uint32(), cursor: try r.optionalString(),
                                              objectCount: try r.uint32(), relatedObjectCount: try r.uint32()))
        case .syncCompleted:
            body = .syncCompleted(SyncCompletion(runID: try r.string(), mode: try readMode(&r), beginTime: try r.optionalString(),
                                                 latestTime: try r.optionalString(), pageCount: try r.uint32(),
                                                 objectCount: try r.uint32()))
        case .localEditProposed:
            let actor = try r.string()
            let device = try r.string()
            let count = try r.varint()
            var targets: [CatalogObjectID] = []
            for _ in 0..<count { targets.append(CatalogObjectID(try r.string())) }
            body = .localEditProposed(LocalEdit(actor: actor, device: device, targetIDs: targets,
                                                baseVersions: try readVersions(&r), requestBody: try r.data(),
                                                idempotencyKey: try r.string()))
        case .upsertAccepted:
            let key = try r.string()
            let versions = try readVersions(&r)
            let count = try r.varint()
            var mappings: [ObjectIDMapping] = []
            for _ in 0..<count {
                mappings.append(ObjectIDMapping(clientObjectID: CatalogObjectID(try r.string()),
                                                objectID: CatalogObjectID(try r.string())))
            }
            body = .upsertAccepted(UpsertAcceptance(idempotencyKey: key, newVersions: versions, idMappings: mappings,
                                                    responseBody: try r.data()))
        case .upsertRejected:
            let key = try r.string()
            let status = try r.varint()
            guard status <= UInt64(UInt16.max) else { throw r.malformed("HTTP status out of range") }
            let errorBody = try r.data()
            let count = try r.varint()
            var objects: [[UInt8]] = []
            for _ in 0..<count { objects.append(try r.data()) }
            body = .upsertRejected(UpsertRejection(idempotencyKey: key, httpStatus: UInt16(status), errorBody: errorBody,
                                                   followUpObjects: objects))
        case .compactionMarker:
            body = .compactionMarker(CompactionMarker(throughSequence: try r.varint(), stateDigest: try r.data()))
        case .priceHistoryRetained:
            body = .priceHistoryRetained(try readRetained(&r))
        case .writeAccepted:
            body = .writeAccepted(WriteAcceptance(call: try r.string(), idempotencyKey: try r.string(),
                                                  movedVersions: try readVersions(&r), updatedAt: try r.string(),
                                                  responseBody: try r.data()))
        case .locationsObserved:
            let count = try r.varint()
            var locations: [SquareLocation] = []
            for _ in 0..<count {
                locations.append(SquareLocation(id: try r.string(), name: try r.string(), status: try r.string()))
            }
            body = .locationsObserved(LocationsObservation(locations: locations, responseBody: try r.data()))
        }
        guard r.isAtEnd else { throw r.malformed("\(payload.count - r.offset) trailing bytes after event body") }
        return LedgerEvent(sequence: sequence, recordedAt: recordedAt,
                           content: PendingEvent(merchantID: merchant, source: source, dedupeKey: dedupeKey,
                                                 correlationID: correlationID, body: body))
    }

    // MARK: Parts

    private static func estimatedBodySize(_ body: EventBody) -> Int {
        switch body {
        case .objectObserved(let o): o.payload.count + 64
        case .webhookReceived(let r): r.body.count + 128
        case .localEditProposed(let e): e.requestBody.count + 128
        case .upsertAccepted(let a): a.responseBody.count + 128
        case .writeAccepted(let a): a.responseBody.count + a.movedVersions.count * 40 + 128
        case .locationsObserved(let l): l.responseBody.count + l.locations.count * 64 + 64
        case .upsertRejected(let r): r.errorBody.count + r.followUpObjects.reduce(0) { $0 + $1.count + 4 } + 64
        case .priceHistoryRetained(let r): r.changes.count * 96 + 128
        default: 64
        }
    }

    /// Header flag bit 2: an observation's Square-Version follows its payload.
    static let squareVersionFlag: UInt8 = 4

    static func writeHeader(_ h: CatalogFactHeader, _ w: inout ByteWriter, extraFlags: UInt8 = 0) {
        w.string(h.objectType.rawValue)
        w.string(h.objectID.rawValue)
        w.zigzag(h.version)
        w.zigzag(h.updatedAtNanos)
        w.string(h.updatedAt)
        w.byte((h.isDeleted ? 1 : 0) | (h.parentID != nil ? 2 : 0) | extraFlags)
        if let parent = h.parentID { w.string(parent.rawValue) }
    }

    /// Reads a header; `allowedExtraFlags` are the bits beyond 0 and 1 the caller reads itself.
    static func readHeader(_ r: inout ByteReader, allowedExtraFlags: UInt8 = 0) throws -> (header: CatalogFactHeader, flags: UInt8) {
        let type = try r.string()
        let id = try r.string()
        let version = try r.zigzag()
        let updatedAtNanos = try r.zigzag()
        let updatedAt = try r.string()
        let flags = try r.byte()
        guard flags & ~(3 | allowedExtraFlags) == 0 else { throw r.malformed("unknown header flags \(flags)") }
        let parent = flags & 2 != 0 ? CatalogObjectID(try r.string()) : nil
        return (CatalogFactHeader(objectType: CatalogObjectType(type), objectID: CatalogObjectID(id), version: version,
                                  updatedAtNanos: updatedAtNanos, updatedAt: updatedAt, isDeleted: flags & 1 != 0,
                                  parentID: parent), flags)
    }

    private static func writeVersions(_ versions: [ObjectVersion], _ w: inout ByteWriter) {
        w.varint(UInt64(versions.count))
        for v in versions { w.string(v.objectID.rawValue); w.zigzag(v.version) }
    }

    private static func readVersions(_ r: inout ByteReader) throws -> [ObjectVersion] {
        let count = try r.varint()
        var result: [ObjectVersion] = []
        for _ in 0..<count { result.append(ObjectVersion(objectID: CatalogObjectID(try r.string()), version: try r.zigzag())) }
        return result
    }

    private static func readMode(_ r: inout ByteReader) throws -> SyncMode {
        guard let mode = SyncMode(rawValue: try r.byte()) else { throw r.malformed("unknown sync mode") }
        return mode
    }
}
