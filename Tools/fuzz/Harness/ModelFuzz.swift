// CatalogModel targets: the event codec, Square catalog objects (JSONScanner underneath) and the
// time expressions typed on the command line.

import CatalogModel
import Foundation
import SquareWire

enum EventCodecFuzz {
    static func run(_ input: [UInt8]) {
        _ = try? EventCodec.decode(sequence: 7, recordedAt: 1_700_000_000_000_000_000, payload: input)
    }
}

enum CatalogObjectFuzz {
    static func run(_ input: [UInt8]) {
        if let value = try? JSONScanner.parse(input) {
            _ = value.members
            _ = value.value(atPath: "item_data.variations")
        }
        if let span = try? JSONScanner.valueSpan(input) {
            _ = try? JSONScanner.members(input, span: span)
            _ = try? JSONScanner.elements(input, span: span)
            _ = try? JSONScanner.member("objects", input, span: span)
        }
        guard let object = try? CatalogObject(bytes: input) else { return }
        for nested in object.flattened {
            _ = nested.name
            _ = nested.priceMoney
            _ = nested.categoryIDs
            _ = nested.reportingCategoryID
            _ = nested.keys
        }
    }
}

enum TimeExpressionFuzz {
    static let now: Int64 = 1_763_000_000_000_000_000
    static let zones = [TimeZone(identifier: "UTC")!, TimeZone(identifier: "America/New_York")!, TimeZone(identifier: "Asia/Kathmandu")!]

    static func run(_ input: [UInt8]) {
        let text = String(decoding: input, as: UTF8.self)
        for zone in zones { _ = try? TimeExpression(parsing: text, now: now, timeZone: zone) }
        if let nanoseconds = RFC3339.nanoseconds(text) {
            // What RFC3339 reads it must be able to write back and read to the same instant.
            let formatted = RFC3339.format(nanoseconds: nanoseconds)
            precondition(RFC3339.nanoseconds(formatted) == nanoseconds, "RFC 3339 round trip changed \(text) -> \(formatted)")
        }
    }
}
