import SquareWire

/// Sync bookkeeping events. A sync run is identified by its run id; each page event carries
/// the counts and cursor of one response so that a run can be audited and resumed.
extension EventBuilder {
    public static func syncStartedEvent(runID: String, mode: SyncMode, beginTime: String?, merchantID: MerchantID) -> PendingEvent {
        PendingEvent(merchantID: merchantID, source: mode.source, dedupeKey: DedupeKey.syncStarted(runID: runID),
                     correlationID: runID, body: .syncStarted(SyncStart(runID: runID, mode: mode, beginTime: beginTime)))
    }

    /// The page event and the observations of one search / list page, in the order to append.
    public static func syncPageEvents(body: [UInt8], runID: String, mode: SyncMode, pageIndex: UInt32,
                                      merchantID: MerchantID) throws -> [PendingEvent] {
        try syncPageEvents(response(body), runID: runID, mode: mode, pageIndex: pageIndex, merchantID: merchantID)
    }

    public static func syncPageEvents(_ response: SquareCatalogResponse, runID: String, mode: SyncMode, pageIndex: UInt32,
                                      merchantID: MerchantID) throws -> [PendingEvent] {
        let page = SyncPage(runID: runID, pageIndex: pageIndex, cursor: response.cursor,
                            objectCount: UInt32(clamping: response.objects.count),
                            relatedObjectCount: UInt32(clamping: response.relatedObjects.count))
        let pageEvent = PendingEvent(merchantID: merchantID, source: mode.source,
                                     dedupeKey: DedupeKey.syncPage(runID: runID, page: pageIndex), correlationID: runID,
                                     body: .syncPageReceived(page))
        return [pageEvent] + (try eventsFromReadResponse(response, merchantID: merchantID, source: mode.source,
                                                         correlationID: runID))
    }

    /// `latestTime` is Square's `latest_time` from the last page: the next watermark.
    public static func syncCompletedEvent(runID: String, mode: SyncMode, beginTime: String?, latestTime: String?,
                                          pageCount: UInt32, objectCount: UInt32, merchantID: MerchantID) -> PendingEvent {
        PendingEvent(merchantID: merchantID, source: mode.source, dedupeKey: DedupeKey.syncCompleted(runID: runID),
                     correlationID: runID,
                     body: .syncCompleted(SyncCompletion(runID: runID, mode: mode, beginTime: beginTime, latestTime: latestTime,
                                                         pageCount: pageCount, objectCount: objectCount)))
    }
}

extension SyncMode {
    public var source: EventSource { self == .full ? .fullSync : .incrementalSync }
}
