#!/usr/bin/env python3
"""Writes WebhookSignatureVectors.json: webhook signatures computed with Python's hmac,
independently of the Swift code under test.

Run from the repository root:
    python3 Tests/SquareIntegrationTests/conformance/make_webhook_vectors.py
"""
import base64
import hashlib
import hmac
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "WebhookSignatureVectors.json")


def sign(url: str, key: str, body: str) -> str:
    mac = hmac.new(key.encode("utf-8"), (url + body).encode("utf-8"), hashlib.sha256)
    return base64.b64encode(mac.digest()).decode("ascii")


URL = "https://cafe.example.com/webhooks/square"
KEY = "Ibxx_5AKakO-3qeNVR61Dw"
OLD_KEY = "MCmhFRxGX82xMwg5FsaoQA"
BODY = ('{"merchant_id":"ML8CAFE0SIM01","type":"catalog.version.updated",'
        '"event_id":"6a8f9e3c-2b1d-4c5e-9f7a-0b1c2d3e4f50","created_at":"2026-01-05T09:00:01.123456789Z",'
        '"data":{"type":"catalog_version","id":"","object":{"catalog_version":{"updated_at":"2026-01-05T09:00:01.000Z"}}}}')
REFORMATTED = json.dumps(json.loads(BODY), indent=2)
UNICODE_BODY = '{"data":{"type":"webhooks","id":">id<","name":"Caffè Latte ☕"}}'

cases = [
    {"name": "catalog event signs and verifies", "notification_url": URL, "signature_keys": [KEY],
     "raw_body": BODY, "signature_header": sign(URL, KEY, BODY), "expected_valid": True},
    {"name": "non-ASCII body is signed as UTF-8 bytes", "notification_url": URL, "signature_keys": [KEY],
     "raw_body": UNICODE_BODY, "signature_header": sign(URL, KEY, UNICODE_BODY), "expected_valid": True},
    {"name": "either key verifies during rotation", "notification_url": URL, "signature_keys": [OLD_KEY, KEY],
     "raw_body": BODY, "signature_header": sign(URL, KEY, BODY), "expected_valid": True},
    {"name": "the old key alone does not verify", "notification_url": URL, "signature_keys": [OLD_KEY],
     "raw_body": BODY, "signature_header": sign(URL, KEY, BODY), "expected_valid": False},
    {"name": "re-serialized body fails", "notification_url": URL, "signature_keys": [KEY],
     "raw_body": REFORMATTED, "signature_header": sign(URL, KEY, BODY), "expected_valid": False},
    {"name": "URL must match byte for byte", "notification_url": URL + "/", "signature_keys": [KEY],
     "raw_body": BODY, "signature_header": sign(URL, KEY, BODY), "expected_valid": False},
    {"name": "truncated signature fails", "notification_url": URL, "signature_keys": [KEY],
     "raw_body": BODY, "signature_header": sign(URL, KEY, BODY)[:20], "expected_valid": False},
    {"name": "legacy SHA-1 length header fails", "notification_url": URL, "signature_keys": [KEY],
     "raw_body": BODY, "signature_header": "1z2n3DEJJiUPKcPzQo1ftvbxGdw=", "expected_valid": False},
]

with open(OUT, "w", encoding="utf-8") as out:
    json.dump({"generator": "conformance/make_webhook_vectors.py (Python hmac + hashlib.sha256)",
               "cases": cases}, out, indent=2, ensure_ascii=False)
    out.write("\n")
print(f"wrote {len(cases)} cases to {OUT}")
