#!/usr/bin/env python3
"""Drives the catalog simulator with Square's official Python SDK (package `squareup`).

Usage: square_sdk_conformance.py BASE_URL TOKEN EXPECTED_LIST_COUNT WEBHOOKS_JSON

The SDK must accept every response the simulator sends as Square's own: paged listing, search
with an exclusive begin_time, batch upsert with id mappings, and a stale-version upsert that
surfaces as an ApiError with code VERSION_MISMATCH; then every other catalog write an app makes:
CreateCatalogImage (multipart, attached to an item), UpdateCatalogImage, UpdateItemTaxes,
UpdateItemModifierLists, DeleteCatalogObject and BatchDeleteCatalogObjects. Its verify_signature
must accept the simulator's webhook signatures. Every response body and webhook is validated
against the SDK's Pydantic models (square_sdk_models.py): an undeclared key fails. Exits 1 on the
first mismatch, 0 when everything conforms.
"""
import json
import sys
import uuid

import httpx
from square import Square
from square.core.api_error import ApiError
from square.utils.webhooks_helper import verify_signature

import square_sdk_models
from square_sdk_models import check, fail


def dump(model) -> dict:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def main() -> None:
    base_url, token, expected_count, webhooks_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    log = square_sdk_models.ResponseLog()
    client = Square(token=token, base_url=base_url, version="2025-08-20",
                    httpx_client=httpx.Client(timeout=60, event_hooks={"response": [log]}))

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

    # 5. The other writes an app makes, each moving the versions Square's would.
    jpeg = bytes([0xFF, 0xD8, 0xFF, 0xE0]) + b"JFIF" + bytes([0xFF, 0xD9])
    before = client.catalog.object.get(object_id=item.id).object.version
    created = client.catalog.images.create(
        request={"idempotency_key": str(uuid.uuid4()), "object_id": item.id,
                 "image": {"type": "IMAGE", "id": "#sdk_photo", "image_data": {"caption": "Macchiato"}}},
        image_file=("macchiato.jpg", jpeg, "image/jpeg"))
    image = created.image
    check(image is not None and image.type == "IMAGE" and not image.id.startswith("#"), f"created image {image}")
    check(image.image_data.url and image.image_data.caption == "Macchiato", "image data")
    attached = client.catalog.object.get(object_id=item.id).object
    check(image.id in (attached.item_data.image_ids or []), "the image is attached to the item")
    check(attached.version == image.version and attached.version > before, "attaching moved the item's version")
    updated = client.catalog.images.update(image.id, request={"idempotency_key": str(uuid.uuid4())},
                                           image_file=("macchiato.png", b"\x89PNG\r\n", "image/png"))
    check(updated.image.version > image.version, "a new file moves the image")
    catalog = client.catalog.search(object_types=["TAX", "MODIFIER_LIST"])
    tax = next(obj.id for obj in catalog.objects if obj.type == "TAX")
    modifier_list = next(obj.id for obj in catalog.objects if obj.type == "MODIFIER_LIST")
    taxes = client.catalog.update_item_taxes(item_ids=[item.id], taxes_to_enable=[tax])
    check(bool(taxes.updated_at), "update_item_taxes answers updated_at")
    lists = client.catalog.update_item_modifier_lists(item_ids=[item.id], modifier_lists_to_enable=[modifier_list])
    check(bool(lists.updated_at), "update_item_modifier_lists answers updated_at")
    toggled = client.catalog.object.get(object_id=item.id).object
    check(tax in (toggled.item_data.tax_ids or []), "the tax is enabled")
    check(any(info.modifier_list_id == modifier_list for info in (toggled.item_data.modifier_list_info or [])),
          "the modifier list is enabled")
    check(toggled.updated_at == lists.updated_at, "the item moved with the toggle")
    related = client.catalog.batch_get(object_ids=[item.id], include_related_objects=True)
    check({obj.id for obj in (related.related_objects or [])} >= {tax, modifier_list, image.id}, "related objects")
    deleted = client.catalog.object.delete(object_id=item.id)
    check(set(deleted.deleted_object_ids or []) == set(mappings.values()), f"delete cascades: {deleted.deleted_object_ids}")
    gone = client.catalog.batch_delete(object_ids=[image.id])
    check(gone.deleted_object_ids == [image.id] and gone.deleted_at, "batch delete")

    # The seller's locations (ListLocations): the names the ledger shows beside location ids.
    locations = client.locations.list().locations or []
    check([(loc.id, loc.name, loc.status) for loc in locations]
          == [("LCAFEMAINST01", "Main Street", "ACTIVE"), ("LCAFEHARBOR02", "Harbor", "ACTIVE")],
          f"locations: {[(loc.id, loc.name) for loc in locations]}")

    # 6. Webhook signatures from the simulator verify with the SDK's helper.
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

    # 7. Every body the SDK received and every webhook, against the SDK's models.
    problems, counts = log.check_all()
    for delivery in deliveries:
        problems += square_sdk_models.check_webhook(delivery["body"])
    check(not problems, "bodies the SDK's models do not declare:\n  " + "\n  ".join(problems))
    check(len(counts) >= 13, f"validated responses of only {sorted(counts)}")

    print(f"conformance ok: {len(listed)} listed in {len(pages)} pages, {len(deliveries)} webhooks verified, "
          f"{sum(counts.values())} responses of {len(counts)} endpoints validated against the SDK's models")


if __name__ == "__main__":
    main()
