import Foundation
import GRDB

extension SearchIndex {
    /// Inserts or replaces the document `(itemId, variationId)`. A document marked deleted is
    /// removed instead.
    public func upsert(_ document: SearchDocument, in db: Database) throws {
        try reportingFailures("upsert item \(document.itemId) variation \(document.variationId ?? "-")") {
            let variationKey = document.variationId ?? ""
            if let docId = try Int64.fetchOne(
                db.cachedStatement(sql: "SELECT doc_id FROM search_document WHERE item_id = ? AND variation_key = ?"),
                arguments: [document.itemId, variationKey])
            {
                try removeDocument(docId: docId, in: db)
            }
            if document.isDeleted { return }
            try insert(document, variationKey: variationKey, in: db)
        }
    }

    /// Removes every document of the item (its variations and the item-level document).
    public func remove(itemId: String, in db: Database) throws {
        try reportingFailures("remove item \(itemId)") {
            let docIds = try Int64.fetchAll(
                db.cachedStatement(sql: "SELECT doc_id FROM search_document WHERE item_id = ?"), arguments: [itemId])
            for docId in docIds { try removeDocument(docId: docId, in: db) }
        }
    }

    /// Removes the document of one variation.
    public func remove(variationId: String, in db: Database) throws {
        // trap-safe: no caller in Sources (tests only); the index's own writes key documents by ids the fold has already checked
        precondition(!variationId.isEmpty, "a variation id is never empty")
        try reportingFailures("remove variation \(variationId)") {
            let docIds = try Int64.fetchAll(
                db.cachedStatement(sql: "SELECT doc_id FROM search_document WHERE variation_key = ?"),
                arguments: [variationId])
            for docId in docIds { try removeDocument(docId: docId, in: db) }
        }
    }

    private func insert(_ document: SearchDocument, variationKey: String, in db: Database) throws {
        try db.cachedStatement(sql: """
            INSERT INTO search_document
                (item_id, variation_key, item_name, variation_name, sku, gtin, sku_key, gtin_key)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [
                document.itemId, variationKey, document.itemName, document.variationName,
                document.sku, document.gtin,
                document.sku.flatMap(TextFolding.skuKey), document.gtin.flatMap(TextFolding.gtinKey),
            ])
        let docId = db.lastInsertedRowID

        let categoryInsert = try db.cachedStatement(
            sql: "INSERT OR IGNORE INTO search_document_category (category_id, doc_id) VALUES (?, ?)")
        for categoryId in document.categoryIds {
            try categoryInsert.execute(arguments: [categoryId, docId])
        }

        let termUpsert = try db.cachedStatement(sql: """
            INSERT INTO search_term (term, doc_count) VALUES (?, 1)
            ON CONFLICT (term) DO UPDATE SET doc_count = doc_count + 1
            RETURNING term_id, doc_count
            """)
        let postingInsert = try db.cachedStatement(
            sql: "INSERT INTO search_posting (term_id, impact, doc_id) VALUES (?, ?, ?)")
        var pairs: [(termId: Int64, impact: Int)] = []
        // Sorted so that the stored list, and therefore the database file, is deterministic.
        for (word, impact) in DocumentPostings(document).impactByWord.sorted(by: { $0.key < $1.key }) {
            guard let row = try Row.fetchOne(termUpsert, arguments: [word]) else {
                throw SearchIndexError(code: .database, message: "term upsert returned no row", location: "term \(word)")
            }
            let termId: Int64 = row[0]
            let docCount: Int64 = row[1]
            if docCount == 1 { try insertDeletions(of: word, termId: termId, in: db) }
            try postingInsert.execute(arguments: [termId, impact, docId])
            pairs.append((termId: termId, impact: impact))
        }
        try db.cachedStatement(sql: "INSERT INTO search_document_terms (doc_id, terms) VALUES (?, ?)")
            .execute(arguments: [docId, TermImpactCodec.encode(pairs)])
    }

    private func insertDeletions(of word: String, termId: Int64, in db: Database) throws {
        guard let depth = deletionDepth(of: word) else { return }
        let insert = try db.cachedStatement(
            sql: "INSERT OR IGNORE INTO search_term_deletion (deletion, term_id) VALUES (?, ?)")
        for variant in EditDistance.deletionVariants(of: word, depth: depth) {
            try insert.execute(arguments: [variant, termId])
        }
    }

    /// Words with digits and very short words are never typo-corrected, so they get no variants.
    private func deletionDepth(of word: String) -> Int? {
        if TextFolding.containsDigit(word) { return nil }
        let depth = EditDistance.deletionsIndexed(termLength: word.unicodeScalars.count)
        return depth > 0 ? depth : nil
    }

    private func removeDocument(docId: Int64, in db: Database) throws {
        let bytes = try Data.fetchOne(
            db.cachedStatement(sql: "SELECT terms FROM search_document_terms WHERE doc_id = ?"), arguments: [docId])
        guard let bytes, let pairs = TermImpactCodec.decode(bytes) else {
            throw SearchIndexError(
                code: .corruptRow, message: "missing or malformed term list", location: "search_document_terms doc \(docId)")
        }
        let postingDelete = try db.cachedStatement(
            sql: "DELETE FROM search_posting WHERE term_id = ? AND impact = ? AND doc_id = ?")
        let termDecrement = try db.cachedStatement(sql: """
            UPDATE search_term SET doc_count = doc_count - 1 WHERE term_id = ? AND doc_count > 1
            """)
        let termFetch = try db.cachedStatement(sql: "SELECT term FROM search_term WHERE term_id = ?")
        let termDelete = try db.cachedStatement(sql: "DELETE FROM search_term WHERE term_id = ?")
        let deletionDelete = try db.cachedStatement(sql: "DELETE FROM search_term_deletion WHERE deletion = ? AND term_id = ?")
        for pair in pairs {
            try postingDelete.execute(arguments: [pair.termId, pair.impact, docId])
            try termDecrement.execute(arguments: [pair.termId])
            if db.changesCount == 0 {
                // The document was the word's last one: the word leaves the vocabulary.
                if let word = try String.fetchOne(termFetch, arguments: [pair.termId]), let depth = deletionDepth(of: word) {
                    for variant in EditDistance.deletionVariants(of: word, depth: depth) {
                        try deletionDelete.execute(arguments: [variant, pair.termId])
                    }
                }
                try termDelete.execute(arguments: [pair.termId])
            }
        }
        try db.cachedStatement(sql: "DELETE FROM search_document_terms WHERE doc_id = ?").execute(arguments: [docId])
        try db.cachedStatement(sql: "DELETE FROM search_document_category WHERE doc_id = ?").execute(arguments: [docId])
        try db.cachedStatement(sql: "DELETE FROM search_document WHERE doc_id = ?").execute(arguments: [docId])
    }
}
