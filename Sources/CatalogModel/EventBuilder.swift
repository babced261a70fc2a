import SquareWire

/// Builds pending events from Square bodies, so ingest code calls one function per response.
/// Pure: the caller supplies everything that is not in the body (source, run or edit id).
/// Each body is read once: the functions taking a `SquareCatalogResponse` use the client's
/// reading of it; those taking bytes (recordings) read them here.
public enum EventBuilder {
    /// Reads a Square response body; a body that is not one throws `CatalogModelError`.
    public static func response(_ body: [UInt8]) throws -> SquareCatalogResponse {
        try CatalogModelError.fromWire { try SquareCatalogResponse(body: body) }
    }

    /// The domain objects of envelopes read from a body (nested ones found in each).
    public static func objects(_ envelopes: [CatalogObjectEnvelope]) throws -> [CatalogObject] {
        try envelopes.map { try CatalogObject(envelope: $0) }
    }

    /// One observation per object, nested variations and modifiers flattened after their
    /// parent (an item with three variations yields four), related objects after the objects.
    /// `squareVersion` is the `Square-Version` of the call that returned them, when known.
    public static func observations(of objects: [CatalogObject], merchantID: MerchantID, source: EventSource,
                                    correlationID: String, squareVersion: String? = nil) -> [PendingEvent] {
        var events: [PendingEvent] = []
        for object in objects {
            for flat in object.flattened {
                let header = CatalogFactHeader(object: flat)
                events.append(PendingEvent(
                    merchantID: merchantID, source: source,
                    dedupeKey: DedupeKey.observation(id: flat.id, version: header.version, payload: flat.rawJSON),
                    correlationID: correlationID,
                    body: .objectObserved(ObjectObservation(header: header, payload: flat.rawJSON,
                                                             squareVersion: squareVersion))))
            }
        }
        return events
    }

    /// Events for a search / list / retrieve / batch-retrieve response body: every object and
    /// related object observed (nested ones flattened), deduplicated within the body.
    public static func eventsFromReadResponse(body: [UInt8], merchantID: MerchantID, source: EventSource,
                                              correlationID: String, squareVersion: String? = nil) throws -> [PendingEvent] {
        try eventsFromReadResponse(response(body), merchantID: merchantID, source: source, correlationID: correlationID,
                                   squareVersion: squareVersion)
    }

    public static func eventsFromReadResponse(_ response: SquareCatalogResponse, merchantID: MerchantID, source: EventSource,
                                              correlationID: String, squareVersion: String? = nil) throws -> [PendingEvent] {
        unique(observations(of: try objects(response.objects + response.relatedObjects), merchantID: merchantID,
                            source: source, correlationID: correlationID, squareVersion: squareVersion))
    }

    /// Events for a successful upsert / batch-upsert response: an `upsertAccepted` with the new
    /// versions and id mappings, then an observation of every returned object.
    public static func eventsFromUpsertResponse(body: [UInt8], idempotencyKey: String, merchantID: MerchantID,
                                                correlationID: String, squareVersion: String? = nil) throws -> [PendingEvent] {
        try eventsFromUpsertResponse(response(body), idempotencyKey: idempotencyKey, merchantID: merchantID,
                                     correlationID: correlationID, squareVersion: squareVersion)
    }

    public static func eventsFromUpsertResponse(_ response: SquareCatalogResponse, idempotencyKey: String,
                                                merchantID: MerchantID, correlationID: String,
                                                squareVersion: String? = nil) throws -> [PendingEvent] {
        let returned = try objects(response.objects)
        let flat = returned.flatMap(\.flattened)
        let acceptance = UpsertAcceptance(
            idempotencyKey: idempotencyKey,
            newVersions: flat.compactMap { o in o.version.map { ObjectVersion(objectID: o.id, version: $0) } },
            idMappings: response.idMappings.map {
                ObjectIDMapping(clientObjectID: CatalogObjectID($0.clientObjectID), objectID: CatalogObjectID($0.objectID))
            },
            responseBody: response.body)
        let accepted = PendingEvent(merchantID: merchantID, source: .upsertResponse,
                                    dedupeKey: DedupeKey.edit(kind: .upsertAccepted, idempotencyKey: idempotencyKey),
                                    correlationID: correlationID, body: .upsertAccepted(acceptance))
        return [accepted] + unique(observations(of: returned, merchantID: merchantID, source: .upsertResponse,
                                                correlationID: correlationID, squareVersion: squareVersion))
    }

    /// Events for a delete / batch-delete response: one tombstone per deleted id, plus one per
    /// known child (`childrenOf`, e.g. an item's variations from the current state) marked as a
    /// cascade. Delete responses carry no version; the tombstone's version is `deleted_at` in
    /// milliseconds, which is how Square stamps versions in every known example.
    public static func eventsFromDeleteResponse(body: [UInt8], merchantID: MerchantID, source: EventSource,
                                                correlationID: String,
                                                objectTypeOf: (CatalogObjectID) -> CatalogObjectType?,
                                                childrenOf: (CatalogObjectID) -> [CatalogObjectID]) throws -> [PendingEvent] {
        eventsFromDeleteResponse(try response(body), merchantID: merchantID, source: source, correlationID: correlationID,
                                 objectTypeOf: objectTypeOf, childrenOf: childrenOf)
    }

    public static func eventsFromDeleteResponse(_ response: SquareCatalogResponse, merchantID: MerchantID,
                                                source: EventSource, correlationID: String,
                                                objectTypeOf: (CatalogObjectID) -> CatalogObjectType?,
                                                childrenOf: (CatalogObjectID) -> [CatalogObjectID]) -> [PendingEvent] {
        let deletedAt = response.deletedAt ?? ""
        let nanos = RFC3339.nanoseconds(deletedAt) ?? 0
        let version = nanos / 1_000_000
        var events: [PendingEvent] = []
        func tombstone(_ id: CatalogObjectID, parent: CatalogObjectID?, cascade: CatalogObjectID?) {
            let header = CatalogFactHeader(objectType: objectTypeOf(id) ?? "UNKNOWN", objectID: id, version: version,
                                           updatedAtNanos: nanos, updatedAt: deletedAt, isDeleted: true, parentID: parent)
            events.append(PendingEvent(merchantID: merchantID, source: source,
                                       dedupeKey: DedupeKey.deletion(id: id, version: version),
                                       correlationID: correlationID,
                                       body: .objectDeleted(ObjectDeletion(header: header, cascadedFrom: cascade))))
        }
        let deletedIDs = response.deletedObjectIDs.map { CatalogObjectID($0) }
        for id in deletedIDs {
            tombstone(id, parent: nil, cascade: nil)
            for child in childrenOf(id) where !deletedIDs.contains(child) {
                tombstone(child, parent: id, cascade: id)
            }
        }
        return events
    }

    /// A `writeAccepted` event: a write other than an upsert that Square accepted, with the
    /// versions it moved; dedupes on the idempotency key.
    public static func writeAcceptedEvent(_ acceptance: WriteAcceptance, merchantID: MerchantID,
                                          correlationID: String) -> PendingEvent {
        PendingEvent(merchantID: merchantID, source: .upsertResponse,
                     dedupeKey: DedupeKey.edit(kind: .writeAccepted, idempotencyKey: acceptance.idempotencyKey),
                     correlationID: correlationID, body: .writeAccepted(acceptance))
    }

    /// A `locationsObserved` event: a ListLocations answer, made by the call `correlationID` names.
    public static func locationsEvent(_ response: SquareLocationsResponse, merchantID: MerchantID, source: EventSource,
                                      correlationID: String) -> PendingEvent {
        PendingEvent(merchantID: merchantID, source: source, dedupeKey: DedupeKey.locations(correlationID: correlationID),
                     correlationID: correlationID,
                     body: .locationsObserved(LocationsObservation(locations: response.locations,
                                                                   responseBody: response.body)))
    }

    /// A `webhookReceived` event for a delivery; dedupes on the body's `event_id`.
    public static func webhookEvent(body: [UInt8], headers: [HTTPHeader], signatureVerdict: SignatureVerdict,
                                    correlationID: String) throws -> PendingEvent {
        let notification = try CatalogModelError.fromWire { try WebhookNotification(body: body) }
        return webhookEvent(notification, body: body, headers: headers, signatureVerdict: signatureVerdict,
                            correlationID: correlationID)
    }

    /// The same from a notification already read from `body`.
    public static func webhookEvent(_ notification: WebhookNotification, body: [UInt8], headers: [HTTPHeader],
                                    signatureVerdict: SignatureVerdict, correlationID: String) -> PendingEvent {
        PendingEvent(merchantID: MerchantID(notification.merchantID), source: .webhook,
                     dedupeKey: DedupeKey.webhook(eventID: notification.eventID), correlationID: correlationID,
                     body: .webhookReceived(WebhookReceipt(eventID: notification.eventID,
                                                           eventType: notification.eventType, headers: headers,
                                                           signatureVerdict: signatureVerdict, body: body)))
    }

    /// A `localEditProposed` event; dedupes on the idempotency key.
    public static func localEditEvent(_ edit: LocalEdit, merchantID: MerchantID, correlationID: String) -> PendingEvent {
        PendingEvent(merchantID: merchantID, source: .localEdit,
                     dedupeKey: DedupeKey.edit(kind: .localEditProposed, idempotencyKey: edit.idempotencyKey),
                     correlationID: correlationID, body: .localEditProposed(edit))
    }

    /// An `upsertRejected` event. `followUpBody`, when given, is the body of the read of the
    /// current objects made after the rejection; its objects (nested ones flattened) are kept raw.
    public static func upsertRejectedEvent(httpStatus: UInt16, errorBody: [UInt8], followUpBody: [UInt8]?,
                                           idempotencyKey: String, merchantID: MerchantID,
                                           correlationID: String) throws -> PendingEvent {
        try upsertRejectedEvent(httpStatus: httpStatus, errorBody: errorBody, followUp: followUpBody.map(response),
                                idempotencyKey: idempotencyKey, merchantID: merchantID, correlationID: correlationID)
    }

    /// The same with the follow-up read already read.
    public static func upsertRejectedEvent(httpStatus: UInt16, errorBody: [UInt8], followUp: SquareCatalogResponse?,
                                           idempotencyKey: String, merchantID: MerchantID,
                                           correlationID: String) throws -> PendingEvent {
        let objects = try followUp.map { try self.objects($0.objects).flatMap(\.flattened).map(\.rawJSON) } ?? []
        return PendingEvent(merchantID: merchantID, source: .upsertResponse,
                            dedupeKey: DedupeKey.edit(kind: .upsertRejected, idempotencyKey: idempotencyKey),
                            correlationID: correlationID,
                            body: .upsertRejected(UpsertRejection(idempotencyKey: idempotencyKey, httpStatus: httpStatus,
                                                                  errorBody: errorBody, followUpObjects: objects)))
    }

    private static func unique(_ events: [PendingEvent]) -> [PendingEvent] {
        var seen = Set<String>()
        return events.filter { seen.insert($0.dedupeKey).inserted }
    }
}
