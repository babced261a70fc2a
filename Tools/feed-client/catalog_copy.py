#!/usr/bin/env python3
"""Keeps a local SQLite copy of one merchant's catalog from the ledger's change feed alone.

An example for apps that today run their own incremental sync from Square's webhooks: instead, read
`GET /merchants/{id}/changes?after=SEQ` from `catledger serve` and apply each page. The copy has the
app's tables (`categories`, `catalog_items`, `item_variations`, the columns of the ledger's projection);
every other type is skipped, and the cursor still moves past it, so no type is ever missed: the feed
carries every object the ledger learned, in ledger order, with its full current JSON or its tombstone.

Each page is applied in one transaction together with the cursor (`feed_state`), so the copy survives a
crash or a kill at any point: the next start asks for the changes after the last page it committed.
Deleted objects stay as rows with `is_deleted = 1`, as in the projection.

    python3 catalog_copy.py --url http://127.0.0.1:8080 --merchant ML8CAFE0SIM01 --token catl_... --db copy.sqlite
        follows the feed with long-polls (30 s) until interrupted
    ... --once
        reads every page there is, then exits ("caught up through N")

Only the Python standard library is used. The token needs the `read` scope.
"""

import argparse
import json
import sqlite3
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

SCHEMA = """
CREATE TABLE IF NOT EXISTS categories (
    id TEXT PRIMARY KEY NOT NULL,
    version INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    is_deleted INTEGER NOT NULL,
    raw_json TEXT,
    name TEXT
);
CREATE TABLE IF NOT EXISTS catalog_items (
    id TEXT PRIMARY KEY NOT NULL,
    version INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    is_deleted INTEGER NOT NULL,
    raw_json TEXT,
    name TEXT,
    description TEXT,
    reporting_category_id TEXT,
    category_ids TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS item_variations (
    id TEXT PRIMARY KEY NOT NULL,
    version INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    is_deleted INTEGER NOT NULL,
    raw_json TEXT,
    item_id TEXT,
    name TEXT,
    sku TEXT,
    upc TEXT,
    ordinal INTEGER,
    pricing_type TEXT,
    price_amount INTEGER,
    price_currency TEXT
);
CREATE INDEX IF NOT EXISTS item_variations_by_item ON item_variations (item_id);
CREATE TABLE IF NOT EXISTS feed_state (
    key TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);
"""


def open_copy(path):
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.executescript(SCHEMA)
    return db


def cursor_of(db):
    row = db.execute("SELECT value FROM feed_state WHERE key = 'after'").fetchone()
    return int(row[0]) if row else None


def data_of(change, key):
    obj = change.get("object") or {}
    data = obj.get(key)
    return data if isinstance(data, dict) else {}


def category_ids(item):
    categories = item.get("categories")
    if isinstance(categories, list) and categories:
        return [c["id"] for c in categories if isinstance(c, dict) and isinstance(c.get("id"), str)]
    legacy = item.get("category_id")
    return [legacy] if isinstance(legacy, str) else []


def apply_change(db, change):
    """Writes one change (an object's current state or its tombstone) into its table, if the app keeps it."""
    kind = change["type"]
    common = (change["id"], change["version"], change["updated_at"], 1 if change["is_deleted"] else 0,
              json.dumps(change.get("object"), sort_keys=True))
    if kind == "CATEGORY":
        data = data_of(change, "category_data")
        db.execute("INSERT OR REPLACE INTO categories VALUES (?, ?, ?, ?, ?, ?)", common + (data.get("name"),))
    elif kind == "ITEM":
        data = data_of(change, "item_data")
        description = data.get("description_plaintext")
        if description is None:
            description = data.get("description")
        reporting = data.get("reporting_category")
        reporting_id = reporting.get("id") if isinstance(reporting, dict) else None
        db.execute("INSERT OR REPLACE INTO catalog_items VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   common + (data.get("name"), description, reporting_id, json.dumps(category_ids(data))))
    elif kind == "ITEM_VARIATION":
        data = data_of(change, "item_variation_data")
        price = data.get("price_money") if isinstance(data.get("price_money"), dict) else {}
        db.execute("INSERT OR REPLACE INTO item_variations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   common + (data.get("item_id") or change.get("parent_id"), data.get("name"), data.get("sku"),
                             data.get("upc"), data.get("ordinal"), data.get("pricing_type"), price.get("amount"),
                             price.get("currency")))


def fetch_page(base_url, merchant, token, after, limit, wait):
    query = {"limit": str(limit)}
    if after is not None:
        query["after"] = str(after)
    if wait:
        query["wait"] = wait
    url = "%s/merchants/%s/changes?%s" % (base_url.rstrip("/"), urllib.parse.quote(merchant), urllib.parse.urlencode(query))
    request = urllib.request.Request(url, headers={"Authorization": "Bearer " + token, "Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=90) as response:
        return json.loads(response.read())


def apply_page(db, page, after):
    """Applies a page and moves the cursor, in one transaction."""
    db.execute("BEGIN IMMEDIATE")
    try:
        for change in page["changes"]:
            apply_change(db, change)
        next_after = page.get("next_after", after)
        if next_after is not None:
            db.execute("INSERT OR REPLACE INTO feed_state (key, value) VALUES ('after', ?)", (str(next_after),))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return next_after


def main(argv=None):
    parser = argparse.ArgumentParser(description="Keep a SQLite copy of a catalog from catledger's change feed.")
    parser.add_argument("--url", required=True, help="the ledger server, e.g. http://127.0.0.1:8080")
    parser.add_argument("--merchant", required=True)
    parser.add_argument("--token", required=True, help="an API token with the read scope")
    parser.add_argument("--db", required=True, help="the SQLite copy (created when missing)")
    parser.add_argument("--limit", type=int, default=100, help="objects per page (1 to 1000)")
    parser.add_argument("--wait", default="30s", help="long-poll wait when following (at most 60s)")
    parser.add_argument("--once", action="store_true", help="read every page there is, then exit")
    args = parser.parse_args(argv)

    db = open_copy(args.db)
    after = cursor_of(db)
    failures = 0
    while True:
        try:
            page = fetch_page(args.url, args.merchant, args.token, after, args.limit, None if args.once else args.wait)
        except urllib.error.HTTPError as error:
            print("the ledger refused: HTTP %d %s" % (error.code, error.read().decode("utf-8", "replace")), file=sys.stderr)
            return 1
        except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
            # The server is restarting or unreachable: try again from the committed cursor.
            failures += 1
            if args.once and failures > 50:
                print("the ledger is unreachable: %s" % error, file=sys.stderr)
                return 1
            time.sleep(min(5.0, 0.1 * failures))
            continue
        failures = 0
        after = apply_page(db, page, after)
        print("page: %d changes, next_after %s" % (len(page["changes"]), after), flush=True)
        if args.once and not page["has_more"] and not page["changes"]:
            print("caught up through %s" % after, flush=True)
            return 0


if __name__ == "__main__":
    sys.exit(main())
