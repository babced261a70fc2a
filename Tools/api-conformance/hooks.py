"""schemathesis hooks of run-schemathesis.sh: most generated webhook deliveries are signed as Square
signs them (HMAC-SHA256 of the notification URL and the body, base64), so the fuzzing reaches the
server's reading of notifications, not only its signature check. The key and URL come from the
environment the script sets; a delivery whose signature header was left out or generated to be invalid
stays as generated, and so does one in four of the others (a bad signature)."""

import base64
import hashlib
import hmac
import json
import os

import schemathesis

SIGNATURE_HEADER = "x-square-hmacsha256-signature"


def headers_are_negative(case):
    """Whether the headers were generated to be invalid (a case that must stay refused)."""
    meta = getattr(case, "_meta", None)
    components = getattr(meta, "components", None) or {}
    for location, info in components.items():
        if getattr(location, "value", location) == "header" and getattr(getattr(info, "mode", None), "is_negative", False):
            return True
    return False


@schemathesis.hook
def before_call(context, case, **kwargs):
    key = os.environ.get("CONFORMANCE_SIGNATURE_KEY")
    url = os.environ.get("CONFORMANCE_NOTIFICATION_URL")
    if not key or not url or case.operation.path != "/webhooks/square" or not case.headers:
        return
    name = next((header for header in case.headers if header.lower() == SIGNATURE_HEADER), None)
    if name is None or headers_are_negative(case):
        return
    # The bytes the transport will send: requests serializes `json=` exactly so. The body itself is left
    # as it is (schemathesis would take bytes for a body that violates the schema).
    body = case.body
    if isinstance(body, bytes):
        data = body
    elif body is None:
        data = b"null"
    else:
        try:
            data = json.dumps(body, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError):
            return
    if hashlib.sha256(data).digest()[0] % 4 == 0:
        return
    digest = hmac.new(key.encode("utf-8"), url.encode("utf-8") + data, hashlib.sha256).digest()
    case.headers[name] = base64.b64encode(digest).decode("ascii")
