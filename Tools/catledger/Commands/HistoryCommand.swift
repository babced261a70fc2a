import ArgumentParser
import CatalogLedger
import CatalogModel
import LedgerQueries

struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Every version of an object: when (Square time and ledger time), from which source, what changed.",
        discussion: """
        Versions are listed in Square version order, then ledger order, each change credited to the event that
        first brought it. An item (a modifier list) is compared on its own fields; the changes of its variations
        (modifiers) follow in a section of their own, since a parent's version does not move when only a child
        changes. --since/--until keep versions by Square time, --limit the newest; a version our own edit
        brought names the actor and device that asked for it.

        Examples:
          catledger history NOBY45VOG5MZYXNO26GNKVU5 --since "last month" --limit 5
          catledger history NOBY45VOG5MZYXNO26GNKVU5 --json
          catledger history NOBY45VOG5MZYXNO26GNKVU5 --db past.sqlite
        """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The catalog object id.")
    var id: String

    @Option(help: "Only versions whose Square time is at or after this time (e.g. 2026-11-01, \"last week\").")
    var since: String?

    @Option(help: "Only versions whose Square time is at or before this time.")
    var until: String?

    @Option(help: "At most this many versions of the object and of each child (the newest).")
    var limit: Int?

    @Option(help: "Read this projection database (a replay: the versions up to its point) instead of the ledger.")
    var db: String?

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be 1 or more") }
    }

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let window = try global.window(since: since, until: until)
            let filter = HistoryFilter(since: window.since, until: window.until, limit: limit)
            let access = LedgerAccess(options: global)
            let found = if let db { try access.projectionLedger(db: db).history(of: CatalogObjectID(id), filter: filter) }
                else { try access.queries().history(of: CatalogObjectID(id), filter: filter) }
            guard let answer = found else {
                throw CLIError(.notFound, "no object \(id) in \(db ?? "the ledger")", hint: "search for it with `catledger search TEXT`")
            }
            if global.json { try printJSON(answer); return }
            let time = try global.timeDisplay()
            let type = answer.names.type(of: answer.objectID)
            print("\(type?.rawValue ?? "object") \(answer.names.labelled(answer.objectID)): \(answer.versions.count) version(s)\n")
            func printVersions(_ versions: [EntityVersion], indent: String) {
                for version in versions {
                    let state = version.isDeleted ? Terminal.colour(" DELETED", "31") : ""
                    let author = answer.author(of: version).map { "  by \($0.actor) on \($0.device)" } ?? ""
                    print(indent + Terminal.colour("v\(version.version)", "1") + state + "  square \(time.square(version.updatedAtNanos))  " +
                          "ledger \(time.ledger(version.firstRecordedAt))  seq \(version.firstSequence)  " +
                          "\(version.source) (\(version.correlationID))" + author)
                    for change in version.changes {
                        print(indent + "    \(answer.names.shownPath(change.path, at: version.moment)): \(change.shownBefore ?? "(absent)") -> \(change.shownAfter ?? "(absent)")")
                    }
                }
            }
            printVersions(answer.versions, indent: "")
            if let type, let nesting = NestedArray.of(parentType: type) {
                for child in answer.children {
                    print("\n\(nesting.childType.rawValue) \(answer.names.labelled(child.id)) (in \(nesting.arrayKey)): \(child.versions.count) version(s)")
                    printVersions(child.versions, indent: "  ")
                }
            }
        }
    }
}
