import CatalogIngest
import Foundation
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import LedgerServer
import NIOCore
import SquareWire
import Testing

/// Every list and string an edit, a report or a search carries is bounded (docs/SECURITY.md,
/// "Request limits"): at its limit the request goes through, one past it is refused 400
/// `limit_exceeded` before any work, in the project's error shape, naming the field and the limit.
/// Before, an edit of 20,000 `object_ids` took 19.6 s (holding the merchant's other edits) and a
/// search for one 20,000-character word 27 s.
@Suite struct RequestLimitsTests {
    typealias Kit = IngestKit
    typealias Limits = RequestLimits

    static func text(_ bytes: Int) -> String { String(repeating: "a", count: bytes) }
    static func ids(_ count: Int) -> [String] { (0..<count).map { "OBJ\($0)" } }

    /// An edit with `change` applied, through the server's admission of a body.
    static func admit(_ change: (inout EditRequest) -> Void) throws -> Result<EditRequest, RequestAdmission.Refusal> {
        var edit = EditRequest(objectID: "V1", price: .init(amount: 450), actor: "ana", device: "ipad-2")
        change(&edit)
        return RequestAdmission.body(EditRequest.self, Array(try JSONEncoder().encode(edit)), contentType: "application/json")
    }

    static func admitReport(_ change: (inout AppReport) -> Void) throws -> Result<AppReport, RequestAdmission.Refusal> {
        var report = AppReport(actor: "pos", device: "till", endpoint: "batch-upsert", idempotencyKey: "k", requestBody: "{}",
                               status: 200, responseBody: "{}")
        change(&report)
        return RequestAdmission.body(AppReport.self, Array(try JSONEncoder().encode(report)), contentType: "application/json")
    }

    /// At `limit` admitted; at `limit + 1` refused with `field` named.
    static func check<T>(_ field: String, _ admit: (Int) throws -> Result<T, RequestAdmission.Refusal>, limit: Int,
                         sourceLocation: SourceLocation = #_sourceLocation) throws {
        if case .failure(let refusal) = try admit(limit) {
            Issue.record("\(field) at its limit \(limit) was refused: \(refusal)", sourceLocation: sourceLocation)
        }
        switch try admit(limit + 1) {
        case .success:
            Issue.record("\(field) past its limit \(limit) was admitted", sourceLocation: sourceLocation)
        case .failure(let refusal):
            #expect(refusal.status == 400, sourceLocation: sourceLocation)
            #expect(refusal.code == "limit_exceeded", sourceLocation: sourceLocation)
            #expect(refusal.message.hasPrefix("\(field) has \(limit + 1) "), "\(refusal.message)", sourceLocation: sourceLocation)
            #expect(refusal.message.hasSuffix("the most is \(limit)"), "\(refusal.message)", sourceLocation: sourceLocation)
            #expect(refusal.hint?.contains("Request limits") == true, sourceLocation: sourceLocation)
        }
    }

    @Test func everyStringAndListOfAnEditIsBounded() throws {
        try Self.check("object_id", { n in try Self.admit { $0.objectID = Self.text(n) } }, limit: Limits.idBytesMax)
        try Self.check("object_ids", { n in try Self.admit { $0.objectIDs = Self.ids(n) } }, limit: Limits.editObjectsMax - 1)
        try Self.check("object_ids[1]", { n in try Self.admit { $0.objectIDs = ["A", Self.text(n)] } }, limit: Limits.idBytesMax)
        try Self.check("name", { n in try Self.admit { $0.name = Self.text(n) } }, limit: Limits.textBytesMax)
        try Self.check("actor", { n in try Self.admit { $0.actor = Self.text(n) } }, limit: Limits.actorBytesMax)
        try Self.check("device", { n in try Self.admit { $0.device = Self.text(n) } }, limit: Limits.actorBytesMax)
        try Self.check("idempotency_key", { n in try Self.admit { $0.idempotencyKey = Self.text(n) } },
                       limit: Limits.idempotencyKeyBytesMax)
        try Self.check("price.currency", { n in try Self.admit { $0.price?.currency = Self.text(n) } }, limit: Limits.codeBytesMax)
        try Self.check("price.location_id", { n in try Self.admit { $0.price?.locationID = Self.text(n) } }, limit: Limits.idBytesMax)
        // Bytes, not characters: "é" is two.
        try Self.check("actor", { n in
            try Self.admit { $0.actor = String(repeating: "é", count: Limits.actorBytesMax / 2) + Self.text(n - Limits.actorBytesMax) }
        }, limit: Limits.actorBytesMax)
    }

    @Test func everyStringAndListOfAPatchIsBounded() throws {
        func patch(_ change: @escaping (inout EditChanges) -> Void) -> (Int) throws -> Result<EditRequest, RequestAdmission.Refusal> {
            { _ in try Self.admit { edit in edit.price = nil; var changes = EditChanges(); change(&changes); edit.changes = changes } }
        }
        let texts: [(String, WritableKeyPath<EditChanges, String?>)] = [("changes.name", \.name), ("changes.sku", \.sku),
                                                                         ("changes.upc", \.upc)]
        for (field, path) in texts {
            try Self.check(field, { n in try patch { $0[keyPath: path] = Self.text(n) }(n) }, limit: Limits.textBytesMax)
        }
        let lists: [(String, WritableKeyPath<EditChanges, [String]?>)] = [
            ("changes.category_ids", \.categoryIDs), ("changes.tax_ids", \.taxIDs), ("changes.modifier_list_ids", \.modifierListIDs),
            ("changes.present_at_location_ids", \.presentAtLocationIDs), ("changes.absent_at_location_ids", \.absentAtLocationIDs),
        ]
        for (field, path) in lists {
            try Self.check(field, { n in try patch { $0[keyPath: path] = Self.ids(n) }(n) }, limit: Limits.changeListMax)
            try Self.check("\(field)[0]", { n in try patch { $0[keyPath: path] = [Self.text(n)] }(n) }, limit: Limits.idBytesMax)
        }
        try Self.check("changes.sold_out", { n in
            try patch { $0.soldOut = Dictionary(uniqueKeysWithValues: Self.ids(n).map { ($0, true) }) }(n)
        }, limit: Limits.changeListMax)
        try Self.check("changes.location_prices", { n in
            try patch { $0.locationPrices = Self.ids(n).map { EditRequest.Price(amount: 1, locationID: $0) } }(n)
        }, limit: Limits.changeListMax)
        try Self.check("changes.location_prices[0].location_id", { n in
            try patch { $0.locationPrices = [EditRequest.Price(amount: 1, locationID: Self.text(n))] }(n)
        }, limit: Limits.idBytesMax)
        try Self.check("changes.price.currency", { n in
            try patch { $0.price = EditRequest.Price(amount: 1, currency: Self.text(n)) }(n)
        }, limit: Limits.codeBytesMax)
    }

    @Test func theFieldsOfAReportAreBounded() throws {
        try Self.check("actor", { n in try Self.admitReport { $0.actor = Self.text(n) } }, limit: Limits.actorBytesMax)
        try Self.check("device", { n in try Self.admitReport { $0.device = Self.text(n) } }, limit: Limits.actorBytesMax)
        try Self.check("endpoint", { n in try Self.admitReport { $0.endpoint = Self.text(n) } }, limit: Limits.codeBytesMax)
        try Self.check("idempotency_key", { n in try Self.admitReport { $0.idempotencyKey = Self.text(n) } },
                       limit: Limits.idempotencyKeyBytesMax)
        try Self.check("object_id", { n in try Self.admitReport { $0.objectID = Self.text(n) } }, limit: Limits.idBytesMax)
        try Self.check("square_version", { n in try Self.admitReport { $0.squareVersion = Self.text(n) } }, limit: Limits.codeBytesMax)
    }

    /// Through the routes: the error shape (code, message, hint, request id), an edit of 1,000 objects
    /// let through to Square (none of them exists there: 404), 20,000 refused at once; a search's
    /// `q` and `category` at and past their limits.
    @Test func theRoutesRefuseWhatIsPastALimit() async throws {
        try await ServerEditTests.withRouter { _, _, ids, client in
            let variation = try #require(ids["#Latte_Large"])
            func post(_ objectIDs: [String]) async throws -> (HTTPResponse.Status, JSONValue) {
                var edit = EditRequest(objectID: variation, price: .init(amount: 475), actor: "ana", device: "ipad-2")
                edit.objectIDs = objectIDs
                return try await ServerEditTests.post(client, edit)
            }
            let (atLimit, atLimitBody) = try await post(Self.ids(Limits.editObjectsMax - 1))
            #expect(atLimit == .notFound, "\(atLimitBody)")
            for count in [Limits.editObjectsMax, 20_000] {
                let (status, body) = try await post(Self.ids(count))
                #expect(status == .badRequest)
                #expect(body["code"]?.stringValue == "limit_exceeded")
                #expect(body["message"]?.stringValue == "object_ids has \(count) entries; the most is \(Limits.editObjectsMax - 1)")
                #expect(body["hint"]?.stringValue?.contains("at most \(Limits.editObjectsMax) objects") == true)
                #expect(body["request_id"]?.stringValue?.isEmpty == false)
            }

            func search(_ query: String) async throws -> (HTTPResponse.Status, JSONValue) {
                let response = try await client.execute(uri: "/merchants/\(Kit.merchant)/search?\(query)", method: .get)
                return (response.status, try JSONScanner.parse(Array(buffer: response.body)))
            }
            let (found, _) = try await search("q=\(Self.text(Limits.searchTextCharactersMax))")
            #expect(found == .ok)
            // Characters, not bytes: 256 "é" (512 bytes, percent-encoded) pass.
            let (accented, _) = try await search("q=\(String(repeating: "%C3%A9", count: Limits.searchTextCharactersMax))")
            #expect(accented == .ok)
            for q in [Self.text(Limits.searchTextCharactersMax + 1), Self.text(20_000)] {
                let (status, body) = try await search("q=\(q)")
                #expect(status == .badRequest)
                #expect(body["code"]?.stringValue == "limit_exceeded")
                #expect(body["message"]?.stringValue == "q has \(q.count) characters; the most is \(Limits.searchTextCharactersMax)")
            }
            // At the limit the value is admitted and read: no category has that name (issue 43: an unknown filter value is refused).
            let (inCategory, inBody) = try await search("q=latte&category=\(Self.text(Limits.idBytesMax))")
            #expect(inCategory == .badRequest && inBody["code"]?.stringValue == "unknown_category", "\(inBody)")
            let (pastCategory, body) = try await search("q=latte&category=\(Self.text(Limits.idBytesMax + 1))")
            #expect(pastCategory == .badRequest)
            #expect(body["message"]?.stringValue == "category has \(Limits.idBytesMax + 1) bytes; the most is \(Limits.idBytesMax)")
        }
    }
}
