#!/usr/bin/env python3
"""Drives the catalog simulator with Square's official Python SDK (package `squareup`).

Usage: square_sdk_conformance.py BASE_URL TOKEN EXPECTED_LIST_COUNT WEBHOOKS_JSON

The SDK must accept every response the simulator sends as Square's own: paged listing, search
with an exclusive begin_time, batch upsert with id mappings, and a stale-version upsert that
surfaces as an ApiError with code VERSION_MISMATCH. Its verify_signature must accept the
simulator's webhook signatures. Exits 1 on the first mismatch, 0 when everything conforms.
"""
import json
import sys
import uuid

from square import Square
from square.core.api_error import ApiError
from square.utils.webhooks_helper import verify_signature


def fail(message: str) -> None:
    print(f"CONFORMANCE FAILURE: {message}", file=sys.stderr)
    sys.exit(1)


def check(condition: bool, message: str) -> None:
    if not condition:
        fail(message)


def dump(model) -> dict:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def main() -> None:
    base_url, token, expected_count, webhooks_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    client = Square(token=token, base_url=base_url, version="2025-08-20")

    # 1. Listing with paging: the SDK's pager follows the simulator's cursors.
    pager = client.catalog.list(types="ITEM,ITEM_VARIATION")
    pages = list(pager.iter_pages())
    listed = [obj for page in pages for obj in (page.items or [])]
    check(len(pages) > 1, f"expected several list pages, got {len(pages)}")
    check(len(listed) == expected_count, f"listed {len(listed)} objects, expected {expected_count}")
    check(len({obj.id for obj in listed}) == len(listed), "list returned an object twice")
    for obj in listed:
        check(obj.type in ("ITEM", "ITEM_VARIATION"), f"unexpected type {obj.type}")
        check(isinstance(obj.version, int) and obj.version > 0, f"object {obj.id} has no version")

    # 2. Search: take the watermark, write, search from the watermark.
    types = ["ITEM", "ITEM_VARIATION", "CATEGORY", "TAX", "MODIFIER_LIST", "MODIFIER"]
    first = client.catalog.search(object_types=types, include_deleted_objects=True)
    watermark = first.latest_time
    check(bool(watermark), "search returned no latest_time")
    empty = client.catalog.search(object_types=types, include_deleted_objects=True, begin_time=watermark)
    check(not empty.objects, "search from latest_time must be empty (begin_time is exclusive)")

    # 3. Batch upsert with temporary ids.
    upserted = client.catalog.batch_upsert(
        idempotency_key=str(uuid.uuid4()),
        batches=[{"objects": [{
            "type": "ITEM", "id": "#Sdk_Macchiato",
            "item_data": {"name": "Macchiato", "variations": [{
                "type": "ITEM_VARIATION", "id": "#Sdk_Macchiato_Regular",
                "item_variation_data": {"name": "Regular", "pricing_type": "FIXED_PRICING",
                                        "price_money": {"amount": 390, "currency": "USD"}}}]}}]}])
    mappings = {m.client_object_id: m.object_id for m in (upserted.id_mappings or [])}
    check(set(mappings) == {"#Sdk_Macchiato", "#Sdk_Macchiato_Regular"}, f"id_mappings {mappings}")
    check(upserted.objects and upserted.objects[0].id == mappings["#Sdk_Macchiato"], "upsert response objects")
    item = upserted.objects[0]
    check(item.item_data.variations[0].version == item.version, "one write, one version")

    changed = client.catalog.search(object_types=types, include_deleted_objects=True, begin_time=watermark)
    changed_ids = {obj.id for obj in (changed.objects or [])}
    check(changed_ids == set(mappings.values()), f"search after write returned {changed_ids}")
    check(changed.latest_time and changed.latest_time > watermark, "latest_time did not advance")

    # 4. A stale version is rejected with VERSION_MISMATCH.
    current = client.catalog.object.get(object_id=item.id).object
    stale = dump(current)
    stale["version"] = stale["version"] - 1
    stale["item_data"]["name"] = "Macchiato (stale)"
    try:
        client.catalog.object.upsert(idempotency_key=str(uuid.uuid4()), object=stale)
        fail("stale upsert was accepted")
    except ApiError as error:
        check(error.status_code == 400, f"stale upsert status {error.status_code}")
        codes = [e.code for e in error.errors]
        check(codes == ["VERSION_MISMATCH"], f"stale upsert error codes {codes}")
        check(error.errors[0].category == "INVALID_REQUEST_ERROR", "stale upsert category")
        check(error.errors[0].field == "version", "stale upsert field")

    # The fetched, unmodified-version object goes through.
    fresh = dump(current)
    fresh["item_data"]["name"] = "Macchiato (fresh)"
    renamed = client.catalog.object.upsert(idempotency_key=str(uuid.uuid4()), object=fresh)
    check(renamed.catalog_object.version > current.version, "fetch-before-update upsert")

    # 5. Webhook signatures from the simulator verify with the SDK's helper.
    with open(webhooks_path, encoding="utf-8") as handle:
        deliveries = json.load(handle)
    check(len(deliveries) > 0, "no webhook deliveries to verify")
    for delivery in deliveries:
        ok = verify_signature(request_body=delivery["body"], signature_header=delivery["signature"],
                              signature_key=delivery["signature_key"], notification_url=delivery["notification_url"])
        check(ok, f"verify_signature rejected event {delivery['event_id']}")
        tampered = verify_signature(request_body=delivery["body"] + " ", signature_header=delivery["signature"],
                                    signature_key=delivery["signature_key"],
                                    notification_url=delivery["notification_url"])
        check(not tampered, "verify_signature accepted a tampered body")
        event = json.loads(delivery["body"])
        check(event["type"] == "catalog.version.updated", "event type")
        check(event["data"]["object"]["catalog_version"]["updated_at"], "event updated_at")

    print(f"conformance ok: {len(listed)} listed in {len(pages)} pages, {len(deliveries)} webhooks verified")


if __name__ == "__main__":
    main()
