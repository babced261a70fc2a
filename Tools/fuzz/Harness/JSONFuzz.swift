// The JSON targets: every JSON parser of the package on the same document. `json` feeds them the
// structure-aware generator's documents (JSONGenerator.swift), `json-raw` the input bytes as they are.
// Besides not crashing, the parsers must agree on nesting: a document the depth check passes never
// fails for depth in a parser, and one a parser reads whole passes the depth check.

import BoundedJSON
import CatalogModel
import Foundation
import SquareWire

enum JSONFuzz {
    static func run(_ input: [UInt8]) {
        check(JSONGenerator.document(from: input))
    }

    static func check(_ document: [UInt8]) {
        let depthChecked = (try? BoundedJSON.checkDepth(document)) != nil

        // SquareWire: the scanner, and the bodies read with it (objects, responses, error bodies,
        // webhook notifications); CatalogModel's objects over them.
        do {
            let value = try JSONScanner.parse(document)
            precondition(depthChecked, "JSONScanner read a document the depth check refuses")
            _ = value.jsonText
            _ = value.value(atPath: "data.object.catalog_version.updated_at")
        } catch let error as SquareWireError {
            precondition(!(depthChecked && error.message == BoundedJSON.depthMessage),
                         "JSONScanner refused for depth a document the depth check passes")
        } catch {
            preconditionFailure("JSONScanner threw \(error)")
        }
        if let span = try? JSONScanner.valueSpan(document) {
            _ = try? JSONScanner.members(document, span: span)
            _ = try? JSONScanner.elements(document, span: span)
        }
        if let object = try? CatalogObject(bytes: document) {
            _ = object.flattened.map { ($0.name, $0.priceMoney, $0.keys) }
        }
        if let response = try? SquareCatalogResponse(body: document) {
            for envelope in response.objects + response.relatedObjects {
                precondition(Array(document[envelope.span]) == envelope.bytes, "an object's bytes are not its span of the body")
            }
            _ = (try? EventBuilder.objects(response.objects))?.flatMap(\.flattened).count
        }
        _ = try? SquareErrorBody(body: document)
        if let notification = try? WebhookNotification(body: document) {
            _ = notification.catalogUpdatedAt.flatMap(RFC3339.nanoseconds)
        }
        if let event = try? SquareJSON.decode(CatalogVersionUpdatedEvent.self, from: document) {
            _ = RFC3339.nanoseconds(event.catalogUpdatedAt)
        }
        do {
            _ = try SquareJSON.decode([String: [String: Int64]].self, from: document)
        } catch is JSONNestingError {
            precondition(!depthChecked)
        } catch {}

        // CatalogIngest: a recording line, then its body the way import reads it.
        if let line = String(validating: document, as: UTF8.self),
           let exchange = try? RecordedExchange.parse(line: line, lineNumber: 1, file: "fuzz.jsonl"),
           let body = exchange.body {
            _ = try? EventBuilder.eventsFromReadResponse(body: Array(body.utf8), merchantID: "M", source: .fullSync,
                                                         correlationID: "fuzz")
        }
    }
}

enum RawJSONFuzz {
    static func run(_ input: [UInt8]) {
        JSONFuzz.check(input)
    }
}
