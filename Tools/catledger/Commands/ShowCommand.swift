import ArgumentParser
import CatalogLedger
import CatalogModel
import LedgerQueries
import Foundation

struct ShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "An object as of now, as of a Square time (--at), as the ledger knew it (--as-known-at), or both.",
        discussion: """
        Examples:
          catledger show NOBY45VOG5MZYXNO26GNKVU5 --at "2026-10-15 12:00"
          catledger show S6SQXTR5QV7U6AGTCQVV4GWP --at 2026-10-15 --as-known-at \\
              2026-10-10 --json
          catledger show NOBY45VOG5MZYXNO26GNKVU5 --db past.sqlite
        """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The catalog object id.")
    var id: String

    @Option(help: "Square time: the catalog as it was then.")
    var at: String?

    @Option(help: "Ledger time: what the ledger had recorded by then.")
    var asKnownAt: String?

    @Option(help: "Read this projection database instead of the ledger: the object as of the file's point (a replay's moment).")
    var db: String?

    func validate() throws {
        if db != nil && (at != nil || asKnownAt != nil) {
            throw ValidationError("show --db FILE answers as of the file's point (a replay's moment, or now for the live projection): "
                                  + "give --db or --at/--as-known-at, not both; `catledger replay --at T --out FILE` writes another moment")
        }
    }

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let access = LedgerAccess(options: global)
            let found: ObjectAsOf?
            let point: AsOf
            if let db {
                let file = try access.projectionLedger(db: db)
                point = file.file.point
                found = try file.object(CatalogObjectID(id))
            } else {
                point = try global.asOf(at: at, asKnownAt: asKnownAt)
                let queries = try access.asOfQueries()
                access.warnIfLastVerificationFailed()
                found = try queries.object(CatalogObjectID(id), asOf: point)
            }
            guard let answer = found else {
                throw CLIError(.notFound, "no object \(id) as of \(point)\(db.map { " in \($0)" } ?? "")",
                               hint: "check the id with `catledger history \(id)` or search with `catledger search`")
            }
            let fact = answer.fact
            // A parent's nested array is rebuilt from its children's facts in force at the point.
            let materialized = answer.payload
            let payload = materialized.isEmpty ? "null" : String(decoding: materialized, as: UTF8.self)
            let names = answer.names
            if global.json {
                FileHandle.standardOutput.write(Data(try answer.json() + Array("\n".utf8)))
                return
            }
            let time = try global.timeDisplay()
            print("\(fact.header.objectType.rawValue) \(names.labelled(fact.header.objectID)) v\(fact.header.version)\(fact.header.isDeleted ? " (deleted)" : "")")
            print("  square time  \(time.square(fact.header.updatedAtNanos))")
            print("  ledger time  \(time.ledger(fact.firstRecordedAt)) (seq \(fact.firstSequence), \(fact.source))")
            print("  as of        \(time.point(point))\n")
            if let data = try? JSONSerialization.jsonObject(with: Data(materialized)),
               let pretty = try? JSONSerialization.data(withJSONObject: data, options: [.prettyPrinted, .sortedKeys]) {
                print(String(decoding: pretty, as: UTF8.self))
            } else {
                print(payload)
            }
        }
    }
}
