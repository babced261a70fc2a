import ArgumentParser
import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import LedgerPages
import LedgerQueries
import SquareWire

/// The guided tour: imports the bundled cafe history into a fresh ledger and shows what the ledger
/// answers (price history with a chart, the catalog replayed to a past moment, a VERSION_MISMATCH
/// incident diagnosed, a search with a typo), then the commands to try next. Every answer comes from
/// `LedgerQueries`, as for the commands the tour names.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Import the bundled 52-day cafe history into a new ledger and take a guided tour.",
        discussion: """
        Examples:
          catledger demo --data-dir demo-ledger
          catledger demo --data-dir demo-ledger --tz Europe/Paris
        """)

    @OptionGroup var global: GlobalOptions

    @Option(help: "The recording to import.")
    var sample = "data-samples/cafe/cafe-history.jsonl"

    func run() async throws {
        try await reportingErrors(json: global.json) {
            guard FileManager.default.fileExists(atPath: sample) else {
                throw CLIError(.notFound, "the sample recording \(sample) is missing",
                               hint: "run the demo from the repository root, or pass --sample PATH")
            }
            let root = global.dataDirectory
            if FileManager.default.fileExists(atPath: root + "/log") {
                throw CLIError(.usage, "\(root) already holds a ledger",
                               hint: "the demo builds a new one: remove \(root) or pass another --data-dir")
            }
            let zone = try global.timeZone()
            section("1. Import", "The cafe's recorded Square traffic (sync pages, webhooks, edits) becomes ledger events.")
            var options = LedgerOptions()
            options.storage.durability = .none
            let ledger = try LedgerAccess(options: global).writer(options: options)
            let started = Date()
            let report = try await RecordingImporter(ledger: ledger).importFiles([sample])
            _ = try ledger.writeSnapshot()
            try await ledger.close()
            print("Imported \(report.exchanges) exchanges in \(String(format: "%.1f", Date().timeIntervalSince(started))) s: " +
                  "\(report.eventsAppended) events appended, \(report.duplicates) re-observations deduplicated.")

            let queries = try LedgerAccess(options: global).queries()
            let stats = try queries.stats()
            let now = try queries.reader.state(asOf: .latest).state
            print("The ledger in \(root) now holds \(stats.events) events (" +
                  stats.eventsByKind.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ") + ").")
            print("Today's catalog: \(stats.liveObjectsByType.values.reduce(0, +)) live objects, " +
                  "\(stats.deletedObjectsByType.values.reduce(0, +)) deleted.")

            section("2. Price history", "Every price a variation ever had, per location, with Square time and ledger time.")
            let variation = try mostRepriced(queries: queries, state: now)
            if let variation {
                var answer = try queries.prices(.object(variation)) ?? PricesAnswer(subject: .object(variation), changes: [], names: CatalogNames())
                answer.changes = answer.changes.filter { $0.scope.kind != .pricingType }
                let changes = answer.changes
                print("The most repriced variation: \(answer.names.display(variation)) (SKU \(now.object(variation)?.sku ?? "-")).\n")
                print("$ catledger prices \(variation.rawValue) --chart\n")
                print(PriceRendering.table(answer, time: TimeDisplay(zone: zone)))
                let names = try queries.names(of: [variation])
                print("\n" + PriceChart.terminal(changes, width: 60, height: 10, name: { names.name(of: $0) },
                                                  locationName: { names.location($0.rawValue) }))
            }

            section("3. Time travel", "The catalog as it was three weeks ago, compared with today.")
            if let last = stats.lastRecordedAt {
                let past = last - 21 * 86_400 * 1_000_000_000
                let before = try queries.reader.state(asOf: AsOf(squareTimeMax: past)).state
                let answer = try queries.diff(from: AsOf(squareTimeMax: past), to: .latest, filter: DiffFilter())
                let diff = answer.diff
                print("$ catledger diff --from \(RFC3339.format(nanoseconds: past).prefix(19))Z\n")
                print("Then: \(before.liveObjects.count) live objects. Since then: \(diff.created.count) created, " +
                      "\(diff.changed.count) changed, \(diff.deleted.count) deleted. A few of the changes:")
                for change in diff.changed.prefix(4) {
                    print(DiffRendering.lines(change, names: answer.names, fields: 2).map { "  " + $0 }.joined(separator: "\n"))
                }
                // One item as of then: its variations as they were then. An item's version does not move when
                // only a variation changes, and every later read of the item carries today's variations, so
                // the ledger rebuilds the nested array from each variation's own version in force then.
                func variations(_ state: CatalogState, _ item: CatalogObjectID) -> [CatalogObject] {
                    guard let payload = state.materializedPayload(of: item), !payload.isEmpty,
                          let object = try? CatalogObject(bytes: payload) else { return [] }
                    return object.nested
                }
                func prices(_ variations: [CatalogObject]) -> String {
                    variations.map { v in
                        "\(v.name ?? v.id.rawValue) \(v.priceMoney.map(\.description) ?? "(variable)")"
                    }.joined(separator: ", ")
                }
                // The item whose variation was repriced soonest after then: its later reads carry the new
                // price at the item's unchanged version, which is what a naive as-of would show.
                let example = before.liveObjects.filter { $0.header.objectType == .item }
                    .compactMap { fact -> (id: CatalogObjectID, name: String, then: [CatalogObject], today: [CatalogObject],
                                           changed: CatalogObject)? in
                        let id = fact.header.objectID
                        let then = variations(before, id), today = variations(now, id)
                        guard !then.isEmpty, prices(then) != prices(today) else { return nil }
                        let changed = today.filter { v in then.first { $0.id == v.id }?.version != v.version }
                            .min { ($0.updatedAtNanos ?? .max) < ($1.updatedAtNanos ?? .max) }
                        guard let changed else { return nil }
                        return (id, before.object(id)?.name ?? id.rawValue, then, today, changed)
                    }
                    .min { ($0.changed.updatedAtNanos ?? .max, $0.name) < ($1.changed.updatedAtNanos ?? .max, $1.name) }
                if let example {
                    let name = example.name
                    print("\n$ catledger show \(example.id.rawValue) --at \(RFC3339.format(nanoseconds: past).prefix(10))\n")
                    print("\(name) then:  \(prices(example.then))")
                    print("\(String(repeating: " ", count: name.count)) today: \(prices(example.today))")
                    let when = example.changed.updatedAtNanos.map { formatTime($0, in: zone) } ?? "later"
                    print("\(example.changed.name ?? example.changed.id.rawValue) was repriced at \(when), after the asked " +
                          "time, and the item's version did not move; every variation is shown at its own version in " +
                          "force then (\(example.then.map { "v\($0.version ?? 0)" }.joined(separator: ", "))).")
                }
                print("\nReplay any moment to a database of the same shape with `catledger replay --at T --out FILE`.")
            }

            section("4. A VERSION_MISMATCH incident", "Square never says which object was stale; the ledger does.")
            let conflicts = try queries.conflicts()
            if let incident = conflicts.first(where: { $0.diagnosis.primaryClassification == .staleMovedOnByOtherWriter }) {
                print("$ catledger diagnose \(incident.sequence)\n")
                if let answer = try queries.diagnosis(named: "\(incident.sequence)") {
                    print(answer.text(TimeDisplay(zone: zone)))
                }
            } else {
                print("(no rejected upserts in this recording)")
            }
            print("\(conflicts.count) rejected upserts in all: `catledger conflicts` lists them with their class.")

            section("5. Search with a typo", "Fuzzy, ranked search over names, SKUs, barcodes and categories.")
            let search = try LedgerAccess(options: global).projection(db: nil, progressLabel: "building projections")
            for text in ["cofee latte", "crossant"] {
                print("$ catledger search \"\(text)\"\n")
                print(SearchRendering.table(try search.searchAnswer(text, limit: 5)) + "\n")
            }

            section("6. Nightly compaction", "Duplicates and superseded sync bookkeeping leave sealed segments, audibly; answers stay the same.")
            let pricesBefore = try variation.map { try queries.priceHistory(of: $0) } ?? []
            let writer = try LedgerAccess(options: global).existingWriter()
            let compaction: LedgerCompactionReport
            do {
                print("$ catledger seal && catledger compact\n")
                let sealed = try await writer.sealActiveSegment().sealed
                compaction = try await writer.compact(options: LedgerCompactionOptions())
                try await writer.close()
                print("Sealed \(sealed ?? "nothing (the active segment was empty)"); compacted \(compaction.runs.count) run(s): " +
                      "\(compaction.bytesBefore) -> \(compaction.bytesAfter) bytes, \(compaction.eventsDropped) event(s) dropped (" +
                      compaction.droppedByReason.sorted { $0.key.rawValue < $1.key.rawValue }
                          .map { "\($0.value) \($0.key.rawValue)" }.joined(separator: ", ") + "), " +
                      "recorded at sequence(s) \(compaction.markerSequences.map(String.init).joined(separator: ", ")).")
            } catch {
                try? await writer.close()
                throw error
            }
            let pricesAfter = try variation.map { try LedgerAccess(options: global).queries().priceHistory(of: $0) } ?? []
            print("The price history shown above is \(pricesAfter == pricesBefore ? "unchanged" : "CHANGED (report this)") " +
                  "after compaction; `catledger verify` checks the rewritten segments.")

            section("Next", "Commands to try on this ledger (add --json for programs):")
            let id = variation?.rawValue ?? "ID"
            print("""
              catledger stats --data-dir \(root)
              catledger history \(id) --data-dir \(root)
              catledger prices \(id) --format csv --data-dir \(root)
              catledger show \(id) --at "2026-10-15 12:00" --data-dir \(root)
              catledger conflicts --data-dir \(root)
              catledger verify --data-dir \(root)
              catledger compact --dry-run --data-dir \(root)

            And live, against the simulator (a faithful fake Square with other devices editing):
              catledger simulator --port 8081 --webhook-url http://127.0.0.1:8080/webhooks/square
              SQUARE_ACCESS_TOKEN=sim catledger serve --data-dir ledgers --merchant ML8CAFE0SIM01 \\
                --square-base-url http://127.0.0.1:8081 --signature-key simulator-signature-key \\
                --notification-url http://127.0.0.1:8080/webhooks/square
              SQUARE_ACCESS_TOKEN=sim catledger check-replay --at "5 minutes ago" --data-dir ledgers/ML8CAFE0SIM01 \\
                --square-base-url http://127.0.0.1:8081     # the replay against the simulator's catalog_version
            """)

            // The audit pages: `serve` keeps one ledger per merchant under a data root, so the demo's
            // ledger is served from its parent directory with its own directory name as the merchant.
            let dataRoot = (root as NSString).deletingLastPathComponent.isEmpty ? "." : (root as NSString).deletingLastPathComponent
            let merchant = (root as NSString).lastPathComponent
            section("The audit pages", "The change log, each object's timeline and price chart, the catalog at any moment, " +
                    "the conflicts and the ledger's health, in a browser:")
            print("""
              catledger token create --data-dir \(dataRoot) --merchant \(merchant) --scope read --name me   # prints a token once
              catledger serve --data-dir \(dataRoot) --merchant \(merchant) --offline --port 8080 \\
                --signature-key demo-key --notification-url http://127.0.0.1:8080/webhooks/square

            Then open http://127.0.0.1:8080/ui and paste the token into the form.
            """)
        }
    }

    private func section(_ title: String, _ subtitle: String) {
        print("\n" + Terminal.colour("== \(title)", "1;36") + "\n" + subtitle + "\n")
    }

    /// The live variation whose prices changed most often, for the price-history tour stop.
    private func mostRepriced(queries: LedgerQueries, state: CatalogState) throws -> CatalogObjectID? {
        var best: (id: CatalogObjectID, changes: Int)?
        for fact in state.liveObjects where fact.header.objectType == .itemVariation {
            let id = fact.header.objectID
            let changes = try queries.priceHistory(of: id).count
            if best == nil || changes > best!.changes || (changes == best!.changes && id < best!.id) { best = (id, changes) }
        }
        return best?.id
    }
}
