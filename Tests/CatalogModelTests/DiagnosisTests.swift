import Foundation
import Testing
@testable import CatalogModel

/// One scripted history per VERSION_MISMATCH class. Item I has variations V1 and V2; all
/// start at version `base` from a full sync.
@Suite("VERSION_MISMATCH diagnosis")
struct DiagnosisTests {
    /// An hour before the script starts: Square time precedes the ledger time that learns it.
    static let base: Int64 = HistoryScript.t0 / 1_000_000 - 3_600_000
    static let later: Int64 = base + 90_000

    static func v1(_ version: Int64?, price: Int64 = 450, deleted: Bool = false) -> String {
        SquareJSON.variation("V1", item: "I", version: version, price: price, deleted: deleted)
    }
    static func v2(_ version: Int64?) -> String { SquareJSON.variation("V2", item: "I", version: version, price: 525) }
    static func item(_ version: Int64?, _ variations: [String]) -> String {
        SquareJSON.item("I", version: version, name: "Latte", variations: variations)
    }

    static func synced() throws -> HistoryScript {
        var s = HistoryScript()
        try s.read(SquareJSON.search([item(base, [v1(base), v2(base)])]), source: .fullSync, correlation: "full-1")
        return s
    }

    static func diagnose(_ s: HistoryScript, _ rejection: LedgerEvent) throws -> VersionMismatchDiagnosis {
        try VersionMismatchDiagnoser(events: s.events).diagnose(rejectionSequence: rejection.sequence)
    }

    static func finding(_ d: VersionMismatchDiagnosis, _ id: CatalogObjectID) throws -> VersionMismatchDiagnosis.ObjectFinding {
        try #require(d.findings.first { $0.objectID == id })
    }

    @Test("missing nested version")
    func missingNestedVersion() throws {
        var s = try Self.synced()
        let request = SquareJSON.upsertRequest(key: "k1", Self.item(Self.base, [Self.v1(Self.base, price: 475), Self.v2(nil)]))
        try s.edit(key: "k1", request: request, base: [.init(objectID: "I", version: Self.base)], targets: ["I", "V1"])
        let rejection = try s.rejected(key: "k1", followUp: SquareJSON.search([Self.item(Self.base, [Self.v1(Self.base), Self.v2(Self.base)])]))
        let d = try Self.diagnose(s, rejection)
        #expect(d.classifications == [.missingNestedVersion])
        let v2 = try Self.finding(d, "V2")
        #expect(v2.classification == .missingNestedVersion)
        #expect(v2.sentVersion == nil && v2.actualVersion == Self.base && v2.parentID == "I")
        #expect(try Self.finding(d, "I").classification == .current)
        #expect(try Self.finding(d, "V1").classification == .current)
        #expect(d.fix.contains("V2=\(Self.base)"))
        #expect(d.editSequence == rejection.sequence - 1)
    }

    @Test("missing version on a top-level object: a partial update")
    func missingVersion() throws {
        var s = try Self.synced()
        let partial = #"{"idempotency_key":"k2","object":{"type":"ITEM_VARIATION","id":"V1","item_variation_data":{"price_money":{"amount":475,"currency":"USD"}}}}"#
        try s.edit(key: "k2", request: partial, base: [], targets: ["V1"])
        let rejection = try s.rejected(key: "k2", followUp: nil)
        let d = try Self.diagnose(s, rejection)
        #expect(d.classifications == [.missingVersion])
        let v1 = try Self.finding(d, "V1")
        #expect(v1.sentVersion == nil)
        #expect(v1.actualVersion == Self.base)
        #expect(v1.reason.kind == .updateWithoutVersion && v1.reason.version == Self.base)
    }

    @Test("stale: another writer moved it on, seen by a webhook-triggered sync")
    func staleOtherWriter() throws {
        var s = try Self.synced()
        try s.edit(key: "k3", request: SquareJSON.upsertRequest(key: "k3", Self.v1(Self.base, price: 500)),
                   base: [.init(objectID: "V1", version: Self.base)], targets: ["V1"], after: 100)
        let rejection = try s.rejected(key: "k3", followUp: nil)
        // The dashboard changed the price 90 s after the sync; the ledger learns it after the rejection.
        let moved = try s.read(SquareJSON.search([Self.v1(Self.later, price: 475)]), source: .incrementalSync, correlation: "inc-webhook-7")
        let d = try Self.diagnose(s, rejection)
        #expect(d.classifications == [.staleMovedOnByOtherWriter])
        let v1 = try Self.finding(d, "V1")
        #expect(v1.sentVersion == Self.base)
        #expect(v1.editorBaseVersion == Self.base)
        #expect(v1.ledgerBelievedVersion == Self.base)
        #expect(v1.actualVersion == Self.later)
        #expect(v1.movedBy.map(\.sequence) == [moved[0].sequence])
        #expect(v1.movedBy.first?.source == .incrementalSync)
        #expect(v1.movedBy.first?.correlationID == "inc-webhook-7")
        #expect(v1.changedFields.map(\.description) == ["item_variation_data.price_money: $4.50 -> $4.75"])
        #expect(v1.reason.kind == .otherWriter && v1.reason.source == .incrementalSync && v1.reason.correlationID == "inc-webhook-7")
        #expect(v1.reason.fields == ["item_variation_data.price_money"] && v1.reason.version == Self.later)
        #expect(d.fix.contains("V1=\(Self.later)"))
    }

    @Test("stale: our own earlier write whose response the editor's cache did not apply")
    func staleOwnWrite() throws {
        var s = try Self.synced()
        try s.edit(key: "k4a", request: SquareJSON.upsertRequest(key: "k4a", Self.v1(Self.base, price: 475)),
                   base: [.init(objectID: "V1", version: Self.base)], targets: ["V1"])
        let accepted = try s.accepted(key: "k4a", response: SquareJSON.upsertResponse(Self.v1(Self.later, price: 475)))
        try s.edit(key: "k4b", request: SquareJSON.upsertRequest(key: "k4b", Self.v1(Self.base, price: 500)),
                   base: [.init(objectID: "V1", version: Self.base)], targets: ["V1"])
        let rejection = try s.rejected(key: "k4b", followUp: SquareJSON.search([Self.v1(Self.later, price: 475)]))
        let d = try Self.diagnose(s, rejection)
        #expect(d.classifications == [.staleOwnEarlierWrite])
        let v1 = try Self.finding(d, "V1")
        #expect(v1.ledgerBelievedVersion == Self.later, "the ledger knew; the editor's cache did not")
        #expect(v1.actualVersion == Self.later)
        #expect(v1.movedBy.first?.sequence == accepted[0].sequence)
        #expect(v1.movedBy.first?.kind == "upsertAccepted")
        #expect(v1.reason.kind == .ownEarlierWrite && v1.reason.idempotencyKey == "k4a" && v1.reason.sequence == accepted[0].sequence)
        #expect(d.fix.contains("Apply the responses of our earlier accepted writes"))
    }

    @Test("target deleted")
    func targetDeleted() throws {
        var s = try Self.synced()
        try s.edit(key: "k5", request: SquareJSON.upsertRequest(key: "k5", Self.v1(Self.base, price: 500)),
                   base: [.init(objectID: "V1", version: Self.base)], targets: ["V1"])
        let rejection = try s.rejected(key: "k5", followUp: nil)
        let tombstone = try s.read(SquareJSON.search([Self.v1(Self.later, deleted: true)]), source: .incrementalSync, correlation: "inc-2")
        let d = try Self.diagnose(s, rejection)
        #expect(d.classifications == [.targetDeleted])
        let v1 = try Self.finding(d, "V1")
        #expect(v1.actualIsDeleted)
        #expect(v1.movedBy.map(\.sequence) == [tombstone[0].sequence])
        #expect(d.fix.contains("Drop deleted V1"))
    }

    @Test("insufficient knowledge says what is missing")
    func insufficientKnowledge() throws {
        var s = try Self.synced()
        try s.edit(key: "k6", request: SquareJSON.upsertRequest(key: "k6", Self.v1(Self.base, price: 500)),
                   base: [.init(objectID: "V1", version: Self.base)], targets: ["V1"])
        let rejection = try s.rejected(key: "k6", followUp: nil)
        let d = try Self.diagnose(s, rejection)
        #expect(d.classifications == [.insufficientKnowledge])
        #expect(d.missingKnowledge.contains { $0.contains("no read of V1 after the rejection") })

        // Without the edit event, nothing about the request is known.
        var bare = try Self.synced()
        let orphan = try bare.rejected(key: "k7", followUp: nil)
        let d2 = try Self.diagnose(bare, orphan)
        #expect(d2.classifications == [.insufficientKnowledge])
        #expect(d2.missingKnowledge.first?.contains("no localEditProposed") == true)
    }

    @Test("batch with a new object: temporary ids are not causes; report renders as text and JSON")
    func batchRendering() throws {
        var s = try Self.synced()
        let newVariation = SquareJSON.variation("#V3", item: "I", version: nil, price: 600)
        let request = SquareJSON.batchUpsertRequest(key: "k8", [Self.item(Self.base, [Self.v1(Self.base), Self.v2(nil), newVariation])])
        try s.edit(key: "k8", request: request, base: [], targets: ["I"])
        let rejection = try s.rejected(key: "k8", followUp: nil)
        try s.read(SquareJSON.search([Self.v2(Self.later)]), source: .webhook, correlation: "wh-9")
        let d = try Self.diagnose(s, rejection)
        #expect(try Self.finding(d, "#V3").classification == .newObject)
        #expect(d.classifications.first == .missingNestedVersion)
        #expect(try Self.finding(d, "V2").reason.kind == .nestedWithoutVersion)
        let json = try JSONEncoder().encode(d)
        #expect(try JSONDecoder().decode(VersionMismatchDiagnosis.self, from: json) == d)
    }

    /// A projection or replay file written before reasons were facts holds each finding's
    /// `explanation` text instead of its `reason`: it still reads, the text kept as it was.
    @Test("a diagnosis recorded with explanation texts still decodes")
    func recordedExplanationsDecode() throws {
        var s = try Self.synced()
        let partial = #"{"idempotency_key":"k2","object":{"type":"ITEM_VARIATION","id":"V1","item_variation_data":{"price_money":{"amount":475,"currency":"USD"}}}}"#
        try s.edit(key: "k2", request: partial, base: [], targets: ["V1"])
        let rejection = try s.rejected(key: "k2", followUp: nil)
        let d = try Self.diagnose(s, rejection)
        var tree = try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(d)) as? [String: Any])
        var findings = try #require(tree["findings"] as? [[String: Any]])
        for index in findings.indices {
            findings[index]["reason"] = nil
            findings[index]["explanation"] = "The request updates existing V1 without a version (a partial update)."
        }
        tree["findings"] = findings
        let old = try JSONDecoder().decode(VersionMismatchDiagnosis.self, from: try JSONSerialization.data(withJSONObject: tree))
        let v1 = try Self.finding(old, "V1")
        #expect(v1.reason.kind == .recorded)
        #expect(v1.reason.text == "The request updates existing V1 without a version (a partial update).")
        #expect(old.classifications == d.classifications && v1.actualVersion == Self.base)
    }

    /// The diagnosis of an edit of V1 at `base` refused after a webhook's read showed it at `later`.
    static func movedOnByAWebhook(key: String) throws -> VersionMismatchDiagnosis {
        var s = try synced()
        try s.edit(key: key, request: SquareJSON.upsertRequest(key: key, v1(base)), base: [], targets: ["V1"])
        try s.read(SquareJSON.search([v1(later)]), source: .webhook, correlation: "wh-\(key)")
        let rejection = try s.rejected(key: key, followUp: nil)
        return try diagnose(s, rejection)
    }

    /// The fix, what is missing and each evidence's object are facts, rendered with the objects
    /// shown by the caller (with names, by LedgerQueries); the words with bare ids are kept too.
    @Test("fix, missing knowledge and evidence are facts, rendered with the caller's names")
    func fixAndMissingAreFacts() throws {
        let d = try Self.movedOnByAWebhook(key: "k5")
        let fix = try #require(d.fixFacts)
        #expect(d.fix == fix.text(\.rawValue))
        #expect(d.missingKnowledge == (d.missing ?? []).map { $0.text(\.rawValue) })
        let named = fix.text { "\($0) \"Latte (\($0))\"" }
        #expect(named.contains(#"V1 "Latte (V1)"=\#(Self.later)"#), "\(named)")
        #expect(named.contains("batch-retrieve V1 with"), "the list to copy keeps bare ids: \(named)")
        let evidence = try #require(try Self.finding(d, "V1").movedBy.first)
        #expect(evidence.objectID == "V1")
        let missing = VersionMismatchDiagnosis.Missing(.missedVersion, objectID: "V2", version: 7)
        #expect(missing.text { "\($0) \"Large\"" } == #"the ledger missed version 7 of V2 "Large": run an incremental sync"#)
    }

    /// A file written before the fix, missing knowledge and evidence objects were facts holds their
    /// words only: it still reads, the words kept as they were.
    @Test("a diagnosis recorded before its fix and missing knowledge were facts still decodes")
    func recordedFixDecodes() throws {
        let d = try Self.movedOnByAWebhook(key: "k6")
        var tree = try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(d)) as? [String: Any])
        tree["missing"] = nil
        tree["fixFacts"] = nil
        var findings = try #require(tree["findings"] as? [[String: Any]])
        for index in findings.indices {
            var evidence = try #require(findings[index]["movedBy"] as? [[String: Any]])
            for e in evidence.indices { evidence[e]["objectID"] = nil }
            findings[index]["movedBy"] = evidence
        }
        tree["findings"] = findings
        let old = try JSONDecoder().decode(VersionMismatchDiagnosis.self, from: try JSONSerialization.data(withJSONObject: tree))
        #expect(old.missing == nil && old.fixFacts == nil)
        #expect(old.fix == d.fix && old.missingKnowledge == d.missingKnowledge)
        #expect(try Self.finding(old, "V1").movedBy.allSatisfy { $0.objectID == nil && !$0.note.isEmpty })
    }

    @Test("diagnosing a sequence that is not a rejection is a thrown error")
    func notARejection() throws {
        let s = try Self.synced()
        let error = try #require(throws: CatalogModelError.self) {
            try VersionMismatchDiagnoser(events: s.events).diagnose(rejectionSequence: 0)
        }
        #expect(error.code == .eventNotFound)
    }
}
