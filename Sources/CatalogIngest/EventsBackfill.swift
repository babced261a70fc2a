import CatalogLedger
import CatalogModel
import Foundation
import Logging
import SquareAPI
import SquareWire

/// What a back-fill from Square's Events API did.
public struct EventsBackfillReport: Sendable, Codable, Equatable {
    /// Catalog events Square still keeps in the window.
    public var eventsRead = 0
    /// Those the ledger had not recorded (webhooks it never received), now recorded.
    public var recorded = 0
}

/// Recovers the delivery audit after a gap (the server was down longer than Square retries a
/// webhook): reads `catalog.version.updated` events from Square's Events API (the last 28 days) and
/// records each the ledger lacks as a `webhookReceived` event, exactly as if it had been delivered
/// (the same body, deduplicated on `event_id`, so a delivered one is a duplicate), marked by its
/// correlation id `events-api:<event_id>` and an unchecked signature (no delivery, no signature).
/// The catalog changes themselves come from sync; this keeps the record of what Square announced.
public enum EventsBackfill {
    public static func run(ledger: Ledger, client: SquareCatalogClient, merchantID: MerchantID, since: String?,
                           logger: Logger) async throws -> EventsBackfillReport {
        let events = try await client.searchEvents(SquareEventSearch(
            types: [CatalogVersionUpdatedEvent.eventType], merchantID: merchantID.rawValue, since: since, limit: 100))
        var report = EventsBackfillReport(eventsRead: events.count)
        var pending: [PendingEvent] = []
        for event in events where event.merchantID == merchantID.rawValue {
            let body = SquareJSON.encodeOrTrap(event.json)
            pending.append(try EventBuilder.webhookEvent(body: body, headers: [], signatureVerdict: .notChecked,
                                                         correlationID: "events-api:\(event.eventID)"))
        }
        for outcome in try await ledger.append(pending) where !outcome.isDuplicate { report.recorded += 1 }
        if report.recorded > 0 {
            logger.warning("webhooks Square announced but never delivered were recorded from its Events API",
                           metadata: ["recorded": "\(report.recorded)", "since": "\(since ?? "28 days")"])
        }
        return report
    }
}
