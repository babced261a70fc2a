import GRDB

/// The catalog search index, stored in SQLite tables that live beside the projections.
///
/// Every method works on a GRDB `Database` handed in by the caller, inside the caller's
/// transaction, so that a projection can store its checkpoint atomically with the index rows.
/// `SearchIndex` itself holds only tuning limits; it is a value and safe to share. The database
/// connection's own rules (one thread at a time) apply to the `db` passed in.
///
/// Storage (see `createSchema`):
/// - `search_document`: one row per document, with display fields and SKU / barcode keys;
/// - `search_document_category`: category membership, for the category filter;
/// - `search_term`: the vocabulary of folded words with their document counts;
/// - `search_term_deletion`: deletion variants of each word, to find typo corrections;
/// - `search_posting`: (word, impact, document), read in impact order (best first);
/// - `search_document_terms`: each document's (word, impact) list, to score multi-word queries.
public struct SearchIndex: Sendable {
    /// Name under which `createSchema` should be registered in a `DatabaseMigrator`. The DDL
    /// behind a shipped name never changes; a new shape gets a new migration.
    public static let schemaMigrationName = "catalogSearch.v1"

    /// Multi-word queries score at most this many candidate documents, read best first from the
    /// postings of the query's rarest word. Bounds the cost of queries made of common words.
    public var multiWordCandidatesMax: Int
    /// Prefix matching considers this many completions of a word (the most frequent ones).
    public var prefixCompletionsMax: Int
    /// A category filter whose category has at most this many documents is evaluated by scoring
    /// every document of the category; larger categories filter the postings instead.
    public var categoryScanDocumentsMax: Int

    public init(multiWordCandidatesMax: Int = 400, prefixCompletionsMax: Int = 24, categoryScanDocumentsMax: Int = 2_000) {
        // trap-safe: tuning constants: every caller passes the defaults or a test's literals
        precondition(multiWordCandidatesMax >= 1 && prefixCompletionsMax >= 1 && categoryScanDocumentsMax >= 0)
        self.multiWordCandidatesMax = multiWordCandidatesMax
        self.prefixCompletionsMax = prefixCompletionsMax
        self.categoryScanDocumentsMax = categoryScanDocumentsMax
    }

    /// Creates the index tables. Frozen: this is the DDL of `schemaMigrationName`.
    public static func createSchema(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE search_document (
                doc_id INTEGER PRIMARY KEY,
                item_id TEXT NOT NULL,
                variation_key TEXT NOT NULL,         -- variation id, or '' for an item without variations
                item_name TEXT NOT NULL,
                variation_name TEXT,
                sku TEXT,
                gtin TEXT,
                sku_key TEXT,                        -- folded, letters and digits only
                gtin_key TEXT,                       -- digits without leading zeros
                UNIQUE (item_id, variation_key)
            );
            CREATE INDEX search_document_by_variation ON search_document (variation_key);
            CREATE INDEX search_document_by_sku ON search_document (sku_key) WHERE sku_key IS NOT NULL;
            CREATE INDEX search_document_by_gtin ON search_document (gtin_key) WHERE gtin_key IS NOT NULL;

            CREATE TABLE search_document_category (
                category_id TEXT NOT NULL,
                doc_id INTEGER NOT NULL,
                PRIMARY KEY (category_id, doc_id)
            ) WITHOUT ROWID;
            CREATE INDEX search_document_category_by_doc ON search_document_category (doc_id);

            CREATE TABLE search_document_terms (
                doc_id INTEGER PRIMARY KEY,
                terms BLOB NOT NULL                  -- little-endian UInt64 (term_id << 8 | impact) each
            );

            CREATE TABLE search_term (
                term_id INTEGER PRIMARY KEY,
                term TEXT NOT NULL UNIQUE,
                doc_count INTEGER NOT NULL CHECK (doc_count > 0)
            );

            CREATE TABLE search_term_deletion (
                deletion TEXT NOT NULL,
                term_id INTEGER NOT NULL,
                PRIMARY KEY (deletion, term_id)
            ) WITHOUT ROWID;

            CREATE TABLE search_posting (
                term_id INTEGER NOT NULL,
                impact INTEGER NOT NULL,
                doc_id INTEGER NOT NULL,
                PRIMARY KEY (term_id, impact, doc_id)
            ) WITHOUT ROWID;
            """)
    }

    /// Runs `body`, turning a database failure into a `SearchIndexError` that says what was
    /// being done.
    func reportingFailures<T>(_ location: @autoclosure () -> String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DatabaseError {
            throw SearchIndexError(code: .database, message: "\(error)", location: location())
        }
    }
}
