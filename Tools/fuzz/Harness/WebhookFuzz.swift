// The webhook target: a received body is decoded as a `catalog.version.updated` notification and
// its signature header checked. The first line of the input is the header, the rest the body, so
// the fuzzer explores both the base64 path and the JSON path.

import CatalogModel
import Foundation
import SquareWire

enum WebhookFuzz {
    static let notificationURL = "https://ledger.example.com/webhooks/square"
    static let signatureKeys = ["fuzz-signature-key", "rotated-key"]

    static func run(_ input: [UInt8]) {
        let split = input.firstIndex(of: UInt8(ascii: "\n")) ?? input.endIndex
        let header = String(decoding: input[..<split], as: UTF8.self)
        let body = Array(input[min(split + 1, input.endIndex)...])

        _ = WebhookSignature.verify(body: body, notificationURL: notificationURL, header: header, signatureKeys: signatureKeys)
        // A body signed with a current key always verifies, whatever its bytes.
        let signed = WebhookSignature.sign(body: body, notificationURL: notificationURL, signatureKey: signatureKeys[1])
        precondition(WebhookSignature.verify(body: body, notificationURL: notificationURL, header: signed, signatureKeys: signatureKeys))

        if let event = try? SquareJSON.decode(CatalogVersionUpdatedEvent.self, from: body) {
            _ = RFC3339.nanoseconds(event.created_at)
            _ = RFC3339.nanoseconds(event.catalogUpdatedAt)
        }
        if let span = try? JSONScanner.valueSpan(body), let typeSpan = try? JSONScanner.member("type", body, span: span) {
            _ = try? JSONScanner.parse(body, span: typeSpan)
        }
    }
}
