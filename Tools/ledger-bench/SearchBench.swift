import ArgumentParser
import CatalogSearch
import Foundation
import GRDB
import LedgerStorage
import LedgerStorageTesting

/// `ledger-bench search`: builds a search index over a generated catalog in a file database and
/// measures query latency against a plain `LIKE '%q%'` scan of the same rows, in one run.
struct SearchBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "Catalog search latency (p50, p99) and index build time against a LIKE scan."
    )

    @Flag(help: "Small catalog (3000 items) for a smoke run of under 30 s.")
    var quick = false

    @Flag(help: "Print the figures as one JSON object.")
    var json = false

    @Option(help: "Generated items (default 100000, or 10000 with --quick).")
    var items: Int?

    @Option(help: "Seed of the catalog and query generator.")
    var seed: UInt64 = 20_251_122

    @Option(help: "Directory for the database file (default: a fresh temporary directory).")
    var directory: String?

    @Flag(help: "Keep the database afterwards, and reuse one a previous --keep run left (the build is then not timed).")
    var keep = false

    @Option(help: "Print this many of the slowest queries with their latency.")
    var slowest = 10

    func run() throws {
        let itemCount = items ?? (quick ? 3_000 : 100_000)
        var generator = SeededGenerator(seed: seed)
        log("search bench: seed \(seed), \(itemCount) generated items")

        let fixtureDocuments = try BenchFixture.documents()
        let generated = CatalogGenerator.documents(itemCount: itemCount, using: &generator)
        let documents = fixtureDocuments + generated
        let directoryURL = directory.map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("ledger-bench-search-\(seed)-\(itemCount)")
        let databaseURL = directoryURL.appendingPathComponent("search.sqlite")
        let reused = keep && FileManager.default.fileExists(atPath: databaseURL.path)
        if !reused {
            try? FileManager.default.removeItem(at: directoryURL)
            try FileManager.default.createDirectory(at: directoryURL, withIntermediateDirectories: true)
        }

        var configuration = Configuration()
        configuration.prepareDatabase { db in
            // A 256 MiB page cache holds the whole index at this scale, as a long-running server would.
            try db.execute(sql: "PRAGMA cache_size = -262144")
        }
        let database = try DatabaseQueue(path: databaseURL.path, configuration: configuration)
        try database.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")
        }
        let index = SearchIndex()
        var buildSeconds = 0.0
        if reused {
            log("reusing the index a previous --keep run left (build not timed)")
        } else {
            buildSeconds = try Self.build(documents, into: database, index: index)
            log("indexed \(documents.count) documents in \(String(format: "%.1f", buildSeconds)) s")
        }
        let databaseBytes = try database.read { db in
            try Int.fetchOne(db, sql: "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size") ?? 0
        }

        let queries = try QueryMix.make(fixtureQueries: BenchFixture.queries(), generated: generated, using: &generator)
        func runSearch(_ text: String) throws -> Int {
            try database.read { db in try index.search(SearchQuery(text: text, limit: 20), in: db).count }
        }
        // Warm the page cache and the statement cache once, as a running server would be.
        for query in queries { _ = try runSearch(query.text) }

        var latenciesByKind: [String: [Double]] = [:]
        var all: [Double] = []
        // CPU time beside wall time: on a shared machine the wall-clock tail is mostly time spent
        // waiting for a core, which CPU time leaves out.
        var cpu: [Double] = []
        var hitsTotal = 0
        for query in queries {
            let start = ContinuousClock.now
            let cpuStart = processCPUMicros()
            hitsTotal += try runSearch(query.text)
            let micros = seconds(ContinuousClock.now - start) * 1e6
            cpu.append(processCPUMicros() - cpuStart)
            latenciesByKind[query.kind, default: []].append(micros)
            all.append(micros)
        }

        // The baseline scans every row for each query; a sample of the same queries keeps it short.
        let baselineSample = stride(from: 0, to: queries.count, by: max(1, queries.count / (quick ? 60 : 40))).map { queries[$0] }
        var baseline: [Double] = []
        var indexedOnSample: [Double] = []
        for query in baselineSample {
            let pattern = "%\(query.text)%"
            let start = ContinuousClock.now
            _ = try database.read { db in
                try Row.fetchAll(db, sql: """
                    SELECT doc_id, item_name, variation_name, sku FROM baseline_document
                    WHERE item_name LIKE ?1 OR variation_name LIKE ?1 OR sku LIKE ?1 OR gtin LIKE ?1
                       OR category_names LIKE ?1 OR description LIKE ?1
                    """, arguments: [pattern]).prefix(20)
            }
            baseline.append(seconds(ContinuousClock.now - start) * 1e6)
            let indexedStart = ContinuousClock.now
            _ = try runSearch(query.text)
            indexedOnSample.append(seconds(ContinuousClock.now - indexedStart) * 1e6)
        }

        let report = SearchBenchReport(
            seed: seed, items: fixtureDocuments.count > 0 ? itemCount : itemCount, documents: documents.count,
            buildSeconds: buildSeconds, databaseBytes: databaseBytes, queries: all.count, hitsTotal: hitsTotal,
            p50Micros: percentile(all, 0.50), p99Micros: percentile(all, 0.99), maxMicros: all.max() ?? 0,
            cpuP50Micros: percentile(cpu, 0.50), cpuP99Micros: percentile(cpu, 0.99),
            byKind: latenciesByKind.mapValues { KindFigures(count: $0.count, p50Micros: percentile($0, 0.5), p99Micros: percentile($0, 0.99)) },
            baselineQueries: baseline.count, baselineP50Micros: percentile(baseline, 0.5),
            baselineP99Micros: percentile(baseline, 0.99), indexedP50OnBaselineSampleMicros: percentile(indexedOnSample, 0.5))
        report.print(asJSON: json)
        if !json && slowest > 0 {
            print("slowest queries:")
            for (query, micros) in zip(queries, all).sorted(by: { $0.1 > $1.1 }).prefix(slowest) {
                print(String(format: "  %8.3f ms  %@  \"%@\"", micros / 1000, query.kind, query.text))
            }
        }
        if !keep { try? FileManager.default.removeItem(at: directoryURL) }
    }

    /// Creates the index and the baseline table, then upserts every document in transactions of
    /// 10 000, as a projection batch would. Returns the index build time in seconds (the baseline
    /// table's load is not counted).
    static func build(_ documents: [SearchDocument], into database: DatabaseQueue, index: SearchIndex) throws -> Double {
        try database.write { db in
            try SearchIndex.createSchema(db)
            try db.execute(sql: """
                CREATE TABLE baseline_document (
                    doc_id INTEGER PRIMARY KEY, item_name TEXT, variation_name TEXT, sku TEXT, gtin TEXT,
                    category_names TEXT, description TEXT)
                """)
        }
        let buildStart = ContinuousClock.now
        for batchStart in stride(from: 0, to: documents.count, by: 10_000) {
            try database.write { db in
                for document in documents[batchStart..<min(batchStart + 10_000, documents.count)] {
                    try index.upsert(document, in: db)
                }
            }
        }
        let buildSeconds = seconds(ContinuousClock.now - buildStart)
        try database.write { db in
            let insert = try db.makeStatement(sql: "INSERT INTO baseline_document VALUES (?, ?, ?, ?, ?, ?, ?)")
            for (offset, document) in documents.enumerated() {
                try insert.execute(arguments: [
                    offset + 1, document.itemName, document.variationName, document.sku, document.gtin,
                    document.categoryNames.joined(separator: " "), document.description,
                ])
            }
        }
        return buildSeconds
    }

    private func log(_ message: String) {
        if !json { print(message) }
    }
}

struct KindFigures: Encodable {
    var count: Int
    var p50Micros: Double
    var p99Micros: Double
}

struct SearchBenchReport: Encodable {
    var seed: UInt64
    var items: Int
    var documents: Int
    var buildSeconds: Double
    var databaseBytes: Int
    var queries: Int
    var hitsTotal: Int
    var p50Micros: Double
    var p99Micros: Double
    var maxMicros: Double
    var cpuP50Micros: Double
    var cpuP99Micros: Double
    var byKind: [String: KindFigures]
    var baselineQueries: Int
    var baselineP50Micros: Double
    var baselineP99Micros: Double
    var indexedP50OnBaselineSampleMicros: Double

    var speedupAtP50: Double { baselineP50Micros / max(indexedP50OnBaselineSampleMicros, 0.001) }
    var meetsTargets: Bool { p99Micros < 5_000 && speedupAtP50 >= 20 }

    func print(asJSON: Bool) {
        if asJSON {
            struct Output: Encodable {
                var report: SearchBenchReport
                var speedupAtP50: Double
                var meetsTargets: Bool
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            let data = try! encoder.encode(Output(report: self, speedupAtP50: speedupAtP50, meetsTargets: meetsTargets))
            Swift.print(String(decoding: data, as: UTF8.self))
            return
        }
        func ms(_ micros: Double) -> String { String(format: "%.3f ms", micros / 1000) }
        Swift.print("documents \(documents) (\(items) generated items + fixture), database \(databaseBytes / 1_048_576) MiB")
        if buildSeconds > 0 {
            Swift.print("index build \(String(format: "%.1f", buildSeconds)) s (\(Int(Double(documents) / buildSeconds)) documents/s)")
        } else {
            Swift.print("index build not timed (reused the index of a previous --keep run)")
        }
        Swift.print("indexed search over \(queries) queries: p50 \(ms(p50Micros)), p99 \(ms(p99Micros)), max \(ms(maxMicros))")
        Swift.print("  CPU time per query: p50 \(ms(cpuP50Micros)), p99 \(ms(cpuP99Micros))")
        for (kind, figures) in byKind.sorted(by: { $0.key < $1.key }) {
            Swift.print("  \(kind.padding(toLength: 12, withPad: " ", startingAt: 0)) n=\(figures.count)\tp50 \(ms(figures.p50Micros))\tp99 \(ms(figures.p99Micros))")
        }
        Swift.print("LIKE scan baseline over \(baselineQueries) of the queries: p50 \(ms(baselineP50Micros)), p99 \(ms(baselineP99Micros)); indexed p50 on the same queries \(ms(indexedP50OnBaselineSampleMicros))")
        Swift.print(String(format: "speed-up at p50: %.0fx; targets (p99 < 5 ms, >= 20x): %@", speedupAtP50, meetsTargets ? "met" : "NOT met"))
    }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// CPU time of the whole process (every thread), in microseconds.
func processCPUMicros() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Double(time.tv_sec) * 1e6 + Double(time.tv_nsec) / 1e3
}

func percentile(_ values: [Double], _ fraction: Double) -> Double {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    let rank = Int((fraction * Double(sorted.count - 1)).rounded())
    return sorted[rank]
}

/// The relevance fixture of the test suite, indexed alongside the generated catalog so that the
/// relevance queries meet the items they were written for.
enum BenchFixture {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tests/Fixtures/search")

    private struct Catalog: Decodable {
        struct Category: Decodable { var id: String; var name: String }
        struct Variation: Decodable { var id: String; var name: String; var sku: String?; var gtin: String? }
        struct Item: Decodable {
            var id: String; var name: String; var categoryIds: [String]; var description: String?
            var variations: [Variation]
        }
        var categories: [Category]
        var items: [Item]
    }
    private struct Queries: Decodable {
        struct Query: Decodable { var query: String }
        var queries: [Query]
    }

    static func documents() throws -> [SearchDocument] {
        let catalog = try JSONDecoder().decode(Catalog.self, from: Data(contentsOf: directory.appendingPathComponent("catalog.json")))
        let names = Dictionary(uniqueKeysWithValues: catalog.categories.map { ($0.id, $0.name) })
        return catalog.items.flatMap { item -> [SearchDocument] in
            let categoryNames = item.categoryIds.compactMap { names[$0] }
            if item.variations.isEmpty {
                return [SearchDocument(itemId: item.id, itemName: item.name, categoryIds: item.categoryIds,
                                       categoryNames: categoryNames, description: item.description)]
            }
            return item.variations.map {
                SearchDocument(itemId: item.id, variationId: $0.id, itemName: item.name, variationName: $0.name,
                               sku: $0.sku, gtin: $0.gtin, categoryIds: item.categoryIds, categoryNames: categoryNames,
                               description: item.description)
            }
        }
    }

    static func queries() throws -> [String] {
        try JSONDecoder().decode(Queries.self, from: Data(contentsOf: directory.appendingPathComponent("queries.json")))
            .queries.map(\.query)
    }
}

/// A large, varied catalog built from word lists: brand, qualifier and flavour words around a
/// product noun, with department categories, size / pack / colour variations, unique SKUs and
/// check-digit-valid UPC-A codes.
enum CatalogGenerator {
    static let brands = [
        "Bluebird", "Northfield", "Casa Verde", "Müller", "Golden Hill", "Redwood", "Saint Clair", "Maison Côte",
        "Little Harbor", "Pacific Trail", "Old Mill", "Green Valley", "Sunrise", "Copper Kettle", "Highland", "Åkesson",
        "Blue Ridge", "Three Oaks", "Wildflower", "Stonegate", "Lakeside", "Orchard Lane", "Black Rock", "Silver Birch",
    ]
    static let qualifiers = [
        "Organic", "Classic", "Smoked", "Roasted", "Spicy", "Sweet", "Fresh", "Artisan", "Premium", "Wild", "Crispy",
        "Creamy", "Toasted", "Salted", "Unsweetened", "Light", "Extra", "Mini", "Family Size", "Gluten Free", "Vegan",
        "Double", "Rustic", "Iced", "Frozen", "Sparkling", "Aged", "Raw", "Whole Grain", "Low Fat", "Seasonal", "Heritage",
    ]
    static let flavours = [
        "Vanilla", "Chocolate", "Strawberry", "Lemon", "Mango", "Cinnamon", "Caramel", "Hazelnut", "Maple", "Blueberry",
        "Raspberry", "Peach", "Coconut", "Almond", "Pistachio", "Ginger", "Mint", "Matcha", "Chipotle", "Jalapeño",
        "Crème Fraîche", "Honey", "Garlic", "Rosemary", "Basil", "Truffle", "Sesame", "Espresso", "Cherry", "Apricot",
        "Black Pepper", "Sea Salt", "Smoky BBQ", "Sour Cream", "Lavender", "Orange", "Pomegranate", "Tomato", "Pumpkin",
        "Butterscotch", "Dark Cherry", "Piña Colada", "Yuzu", "Cardamom", "Turmeric", "Habanero", "Wasabi", "Açaí",
    ]
    /// Product noun, department, variation family.
    static let products: [(noun: String, department: String, family: Int)] = [
        ("Coffee", "Coffee", 0), ("Latte", "Coffee", 0), ("Cold Brew", "Coffee", 0), ("Espresso Beans", "Coffee", 1),
        ("Tea", "Tea", 0), ("Herbal Tea", "Tea", 2), ("Chai", "Tea", 0), ("Cookie", "Bakery", 2), ("Muffin", "Bakery", 2),
        ("Croissant", "Bakery", 2), ("Bagel", "Bakery", 2), ("Bread", "Bakery", 4), ("Cake", "Desserts", 4),
        ("Tart", "Desserts", 4), ("Ice Cream", "Frozen", 1), ("Sorbet", "Frozen", 1), ("Granola", "Pantry", 1),
        ("Oatmeal", "Pantry", 1), ("Yogurt", "Dairy", 1), ("Cheese", "Dairy", 1), ("Butter", "Dairy", 1),
        ("Milk", "Dairy", 1), ("Crackers", "Snacks", 2), ("Chips", "Snacks", 2), ("Popcorn", "Snacks", 2),
        ("Pretzels", "Snacks", 2), ("Nuts", "Snacks", 1), ("Jerky", "Snacks", 1), ("Chocolate Bar", "Snacks", 2),
        ("Candy", "Snacks", 2), ("Soda", "Beverages", 2), ("Juice", "Beverages", 1), ("Kombucha", "Beverages", 2),
        ("Sparkling Water", "Beverages", 2), ("Lemonade", "Beverages", 2), ("Smoothie", "Beverages", 0),
        ("Pasta", "Pantry", 1), ("Rice", "Pantry", 1), ("Sauce", "Pantry", 1), ("Salsa", "Pantry", 1),
        ("Olive Oil", "Pantry", 1), ("Vinegar", "Pantry", 1), ("Jam", "Pantry", 1), ("Syrup", "Pantry", 1),
        ("Soup", "Pantry", 2), ("Pizza", "Frozen", 4), ("Dumplings", "Frozen", 2), ("Burrito", "Deli", 4),
        ("Sandwich", "Deli", 4), ("Salad", "Deli", 4), ("Wrap", "Deli", 4), ("Soap", "Personal Care", 2),
        ("Shampoo", "Personal Care", 1), ("Lotion", "Personal Care", 1), ("Candle", "Home", 3),
        ("Mug", "Merchandise", 3), ("Tumbler", "Merchandise", 3), ("T-Shirt", "Apparel", 5), ("Hoodie", "Apparel", 5),
        ("Socks", "Apparel", 5), ("Cap", "Apparel", 3), ("Notebook", "Stationery", 3), ("Pen Set", "Stationery", 3),
        ("Tote Bag", "Merchandise", 3), ("Dog Treats", "Pet Supplies", 1), ("Cat Food", "Pet Supplies", 1),
        ("Detergent", "Household", 1), ("Sponges", "Household", 2), ("Paper Towels", "Household", 2),
        ("Dish Soap", "Household", 1), ("Cutting Board", "Kitchenware", 3), ("Skillet", "Kitchenware", 3),
        ("Kettle", "Kitchenware", 3), ("Grinder", "Kitchenware", 3),
    ]
    static let families: [[String]] = [
        ["Small", "Medium", "Large", "Extra Large"],
        ["250 g", "500 g", "1 kg", "12 oz", "2 lb", "32 oz"],
        ["Single", "4 Pack", "6 Pack", "12 Pack", "24 Pack"],
        ["Black", "White", "Red", "Navy", "Forest Green", "Oatmeal"],
        ["Slice", "Whole", "Half", "Family"],
        ["XS", "S", "M", "L", "XL", "XXL"],
    ]
    static let categoryQualifiers = ["", "Local", "Imported", "Seasonal", "Organic", "Value", "Gifts"]
    static let descriptionWords = [
        "made", "small", "batch", "crafted", "locally", "sourced", "ingredients", "rich", "smooth", "bold", "bright",
        "notes", "finish", "perfect", "pairing", "breakfast", "afternoon", "everyday", "favourite", "recipe", "family",
        "owned", "farm", "harvested", "season", "naturally", "flavour", "texture", "crunchy", "tender", "slow", "cooked",
        "hand", "packed", "sustainable", "packaging", "recyclable", "gift", "ready", "serve", "enjoy", "warm", "chilled",
        "best", "before", "store", "cool", "dry", "place", "contains", "nuts", "dairy", "free", "vegetarian", "friendly",
        "durable", "soft", "cotton", "ceramic", "stainless", "steel", "dishwasher", "safe", "gentle", "scent", "lasting",
    ]

    static func documents(itemCount: Int, using generator: inout SeededGenerator) -> [SearchDocument] {
        var documents: [SearchDocument] = []
        documents.reserveCapacity(itemCount * 3)
        var upcSerial = 0
        for itemIndex in 0..<itemCount {
            let product = products.randomElement(using: &generator)!
            var words: [String] = []
            switch Int.random(in: 0..<4, using: &generator) {
            case 0: words = [qualifiers.randomElement(using: &generator)!, flavours.randomElement(using: &generator)!]
            case 1: words = [brands.randomElement(using: &generator)!, flavours.randomElement(using: &generator)!]
            case 2: words = [brands.randomElement(using: &generator)!, qualifiers.randomElement(using: &generator)!]
            default: words = [flavours.randomElement(using: &generator)!]
            }
            let name = (words + [product.noun]).joined(separator: " ")
            let itemId = "GEN-I\(itemIndex)"
            let qualifier = categoryQualifiers.randomElement(using: &generator)!
            var categoryNames = [product.department]
            if !qualifier.isEmpty { categoryNames.append("\(qualifier) \(product.department)") }
            let categoryIds = categoryNames.map { "GEN-C-" + $0.replacingOccurrences(of: " ", with: "-").uppercased() }
            let description = (0..<Int.random(in: 8...18, using: &generator))
                .map { _ in descriptionWords.randomElement(using: &generator)! }.joined(separator: " ")
                + " " + product.noun.lowercased() + "."
            let family = families[product.family]
            let variationCount = Int.random(in: 1...min(5, family.count), using: &generator)
            let start = Int.random(in: 0...(family.count - variationCount), using: &generator)
            let skuStem = String(product.department.uppercased().filter(\.isLetter).prefix(3)) + "-" + String(itemIndex, radix: 36).uppercased()
            for variationName in family[start..<(start + variationCount)] {
                upcSerial += 1
                documents.append(SearchDocument(
                    itemId: itemId, variationId: "\(itemId)-V\(upcSerial)", itemName: name, variationName: variationName,
                    sku: skuStem + "-" + variationName.uppercased().filter { $0.isLetter || $0.isNumber },
                    gtin: upcA(serial: upcSerial), categoryIds: categoryIds, categoryNames: categoryNames,
                    description: description))
            }
        }
        return documents
    }

    /// A UPC-A code: number system 0, eleven digits with `serial`, then the check digit.
    static func upcA(serial: Int) -> String {
        let body = Array("07" + String(format: "%09d", serial)).map { Int(String($0))! }
        let odd = stride(from: 0, to: 11, by: 2).reduce(0) { $0 + body[$1] }
        let even = stride(from: 1, to: 11, by: 2).reduce(0) { $0 + body[$1] }
        let check = (10 - (odd * 3 + even) % 10) % 10
        return body.map(String.init).joined() + String(check)
    }
}

/// The queries timed: the relevance set, plus random prefixes, typos, multi-word queries, SKUs
/// and barcodes drawn from the generated catalog.
struct QueryMix {
    var text: String
    var kind: String

    static func make(fixtureQueries: [String], generated: [SearchDocument], using generator: inout SeededGenerator) throws -> [QueryMix] {
        var mix = fixtureQueries.map { QueryMix(text: $0, kind: "relevance") }
        func randomDocument() -> SearchDocument { generated.randomElement(using: &generator)! }
        func nameWords(_ document: SearchDocument) -> [String] {
            document.itemName.split(separator: " ").map(String.init)
        }
        for _ in 0..<300 {
            let word = nameWords(randomDocument()).randomElement(using: &generator)!
            mix.append(QueryMix(text: String(word.prefix(Int.random(in: 2...6, using: &generator))), kind: "prefix"))
        }
        for _ in 0..<300 {
            let candidates = nameWords(randomDocument()).filter { $0.count >= 5 }
            guard let word = candidates.randomElement(using: &generator) else { continue }
            mix.append(QueryMix(text: typo(in: word, using: &generator), kind: "typo"))
        }
        for _ in 0..<200 {
            let document = randomDocument()
            var words = nameWords(document).shuffled(using: &generator).prefix(2).map { $0 }
            if Bool.random(using: &generator), let variation = document.variationName { words.append(variation) }
            let last = words.removeLast()
            words.append(String(last.prefix(max(3, last.count - Int.random(in: 0...2, using: &generator)))))
            mix.append(QueryMix(text: words.joined(separator: " "), kind: "multiword"))
        }
        for _ in 0..<200 { mix.append(QueryMix(text: randomDocument().sku!, kind: "sku")) }
        for _ in 0..<100 { mix.append(QueryMix(text: randomDocument().gtin!, kind: "upc")) }
        return mix.shuffled(using: &generator)
    }

    /// One random edit: substitution, deletion, insertion or transposition.
    static func typo(in word: String, using generator: inout SeededGenerator) -> String {
        var characters = Array(word.lowercased())
        let position = Int.random(in: 1..<(characters.count - 1), using: &generator)
        let letter = "abcdefghijklmnopqrstuvwxyz".randomElement(using: &generator)!
        switch Int.random(in: 0..<4, using: &generator) {
        case 0: characters[position] = letter
        case 1: characters.remove(at: position)
        case 2: characters.insert(letter, at: position)
        default: characters.swapAt(position, position + 1)
        }
        return String(characters)
    }
}
