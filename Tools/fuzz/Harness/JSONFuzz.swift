// The JSON targets: every JSON parser of the package on the same document. `json` feeds them the
// structure-aware generator's documents (JSONGenerator.swift), `json-raw` the input bytes as they are.
// Besides not crashing, the parsers must agree on nesting: a document the depth check passes never
// fails for depth in a parser, and one a parser reads whole passes the depth check.

import BoundedJSON
import CatalogModel
import Foundation

enum JSONFuzz {
    static func run(_ input: [UInt8]) {
        check(JSONGenerator.document(from: input))
    }

    static func check(_ document: [UInt8]) {
        let depthChecked = (try? BoundedJSON.checkDepth(document)) != nil

        // CatalogModel: JSONScanner, objects, responses, webhook notifications.
        do {
            let value = try JSONScanner.parse(document)
            precondition(depthChecked, "JSONScanner read a document the depth check refuses")
            _ = value.jsonText
            _ = value.value(atPath: "data.object.catalog_version.updated_at")
        } catch let error as CatalogModelError {
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
        if let response = try? CatalogResponse(body: document) {
            _ = response.objects.flatMap(\.flattened).count
        }
        _ = try? WebhookNotification(body: document)

        // SquareAPI: the raw scanner the client splits responses with, and its Decodable bodies.
        if let members = try? RawJSONScanner.topLevelMembers(of: document), let objects = members["objects"],
           document[objects.lowerBound] == UInt8(ascii: "[") {
            _ = try? RawJSONScanner.arrayElements(of: document, in: objects)
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
            _ = try? CatalogResponse(body: Array(body.utf8))
        }
    }
}

enum RawJSONFuzz {
    static func run(_ input: [UInt8]) {
        JSONFuzz.check(input)
    }
}
