"""Compares the example client's copy (Tools/feed-client/catalog_copy.py) with a ledger's projection:
the rows of `categories`, `catalog_items` (placeholders aside) and `item_variations`, column by column.

    python3 compare_feed_copy.py COPY.sqlite PROJECTIONS.sqlite
Prints "copies equal: ..." and exits 0, or prints the differences and exits 1.
"""

import json
import sqlite3
import sys

TABLES = {
    "categories": ("id, version, is_deleted, name", ""),
    "catalog_items": ("id, version, is_deleted, name, description, reporting_category_id, category_ids",
                      " WHERE is_placeholder = 0"),
    "item_variations": ("id, version, is_deleted, item_id, name, sku, upc, ordinal, pricing_type, price_amount, price_currency",
                        ""),
}


def rows(path, table, columns, where):
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        result = {}
        for row in db.execute("SELECT %s FROM %s%s" % (columns, table, where)):
            row = list(row)
            if table == "catalog_items":
                row[-1] = json.loads(row[-1])
            result[row[0]] = row
        return result
    finally:
        db.close()


def main():
    copy_path, projection_path = sys.argv[1], sys.argv[2]
    differences = []
    counts = []
    for table, (columns, where) in TABLES.items():
        copy = rows(copy_path, table, columns, "")
        projection = rows(projection_path, table, columns, where)
        counts.append("%d %s" % (len(projection), table))
        for key in sorted(set(copy) | set(projection)):
            if copy.get(key) != projection.get(key):
                differences.append("%s %s: copy %s, projection %s" % (table, key, copy.get(key), projection.get(key)))
    if differences:
        print("the copy differs from the projection in %d rows:" % len(differences))
        for line in differences[:40]:
            print("  " + line)
        return 1
    print("copies equal: " + ", ".join(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
