/// Builds pending events from Square bodies, so ingest code calls one function per response.
/// Pure: the caller supplies everything that is not in the body (source, run or edit id).
public enum EventBuilder {
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
        let response = try CatalogResponse(body: body)
        return unique(observations(of: response.objects + response.relatedObjects, merchantID: merchantID,
                                   source: source, correlationID: correlationID, squareVersion: squareVersion))
    }

    /// Events for a successful upsert / batch-upsert response: an `upsertAccepted` with the new
    /// versions and id mappings, then an observation of every returned object.
    public static func eventsFromUpsertResponse(body: [UInt8], idempotencyKey: String, merchantID: MerchantID,
                                                correlationID: String, squareVersion: String? = nil) throws -> [PendingEvent] {
        let response = try CatalogResponse(body: body)
        let flat = response.objects.flatMap(\.flattened)
        let acceptance = UpsertAcceptance(
            idempotencyKey: idempotencyKey,
            newVersions: flat.compactMap { o in o.version.map { ObjectVersion(objectID: o.id, version: $0) } },
            idMappings: response.idMappings, responseBody: body)
        let accepted = PendingEvent(merchantID: merchantID, source: .upsertResponse,
                                    dedupeKey: DedupeKey.edit(kind: .upsertAccepted, idempotencyKey: idempotencyKey),
                                    correlationID: correlationID, body: .upsertAccepted(acceptance))
        return [accepted] + unique(observations(of: response.objects, merchantID: merchantID, source: .upsertResponse,
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
        let response = try CatalogResponse(body: body)
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
        for id in response.deletedObjectIDs {
            tombstone(id, parent: nil, cascade: nil)
            for child in childrenOf(id) where !response.deletedObjectIDs.contains(child) {
                tombstone(child, parent: id, cascade: id)
            }
        }
        return events
    }

    /// A `webhookReceived` event for a delivery; dedupes on the body's `event_id`.
    public static func webhookEvent(body: [UInt8], headers: [HTTPHeader], signatureVerdict: SignatureVerdict,
                                    correlationID: String) throws -> PendingEvent {
        let notification = try WebhookNotification(body: body)
        return PendingEvent(merchantID: notification.merchantID, source: .webhook,
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
        var objects: [[UInt8]] = []
        if let followUpBody {
            objects = try CatalogResponse(body: followUpBody).objects.flatMap(\.flattened).map(\.rawJSON)
        }
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
