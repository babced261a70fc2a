#!/usr/bin/env python3
"""Drives the simulator's OAuth endpoints with Square's official Python SDK (package `squareup`).

Usage: square_sdk_oauth_conformance.py BASE_URL CLIENT_ID CLIENT_SECRET REDIRECT_URL WEBHOOKS_JSON

The authorize page redirects to the app's URL with `code` and `state`; the SDK's
`o_auth.obtain_token` exchanges the code (code flow: id and secret) and then the refresh token
(the same refresh token comes back); the access token reads the seller's catalog;
`o_auth.revoke_token` (`Authorization: Client <secret>`) ends it, after which a catalog call is an
ApiError 401 ACCESS_TOKEN_REVOKED and the refresh token is refused. Every OAuth response and each
`oauth.authorization.revoked` webhook in WEBHOOKS_JSON is validated against the SDK's models
(square_sdk_models.py). Exits 1 on the first mismatch, 0 when everything conforms.
"""
import json
import sys
from urllib.parse import parse_qs, urlsplit

import httpx
from square import Square
from square.core.api_error import ApiError

import square_sdk_models
from square_sdk_models import check, fail


def api_error_code(error: ApiError) -> str:
    body = error.body if isinstance(error.body, dict) else {}
    return (body.get("errors") or [{}])[0].get("code", "")


def main() -> None:
    base_url, client_id, client_secret, redirect_url, webhooks_path = sys.argv[1:6]
    log = square_sdk_models.ResponseLog()
    app = Square(token=None, base_url=base_url, version="2025-08-20",
                 httpx_client=httpx.Client(timeout=60, event_hooks={"response": [log]}))

    # 1. The authorize page answers with a redirect to the app's URL carrying code and state.
    page = httpx.get(f"{base_url}/oauth2/authorize", timeout=60, follow_redirects=False,
                     params={"client_id": client_id, "scope": "ITEMS_READ ITEMS_WRITE", "session": "false",
                             "state": "sdk-state"})
    check(page.status_code == 302, f"authorize answered {page.status_code}")
    location = page.headers["location"]
    check(location.startswith(redirect_url + "?"), f"redirect to {location}")
    query = parse_qs(urlsplit(location).query)
    check(query.get("state") == ["sdk-state"], f"state {query.get('state')}")
    code = query["code"][0]

    # 2. ObtainToken: the code, then the refresh token.
    tokens = app.o_auth.obtain_token(client_id=client_id, client_secret=client_secret, code=code,
                                     grant_type="authorization_code")
    check(tokens.token_type == "bearer" and tokens.access_token and tokens.refresh_token, "token answer")
    check(bool(tokens.expires_at) and bool(tokens.merchant_id), "expires_at and merchant_id")
    refreshed = app.o_auth.obtain_token(client_id=client_id, client_secret=client_secret,
                                        refresh_token=tokens.refresh_token, grant_type="refresh_token")
    check(refreshed.refresh_token == tokens.refresh_token, "the code flow answers a refresh with the same refresh token")
    check(refreshed.access_token != tokens.access_token, "a new access token")
    try:
        app.o_auth.obtain_token(client_id=client_id, client_secret=client_secret, code=code,
                                grant_type="authorization_code")
        fail("a redeemed code was exchanged again")
    except ApiError as error:
        check(error.status_code == 401, f"redeemed code: {error.status_code}")

    # 3. The seller's catalog with the seller's token.
    seller = Square(token=refreshed.access_token, base_url=base_url, version="2025-08-20",
                    httpx_client=httpx.Client(timeout=60))
    items = list(seller.catalog.list(types="ITEM"))
    check(len(items) > 0, "the seller's catalog")

    # 4. RevokeToken with the app's secret: every token of the seller stops working.
    revoked = app.o_auth.revoke_token(client_id=client_id, merchant_id=tokens.merchant_id,
                                      request_options={"additional_headers": {"Authorization": f"Client {client_secret}"}})
    check(revoked.success is True, "revoke answers success")
    try:
        list(seller.catalog.list(types="ITEM"))
        fail("a revoked token still read the catalog")
    except ApiError as error:
        check(error.status_code == 401 and api_error_code(error) == "ACCESS_TOKEN_REVOKED",
              f"revoked token: {error.status_code} {api_error_code(error)}")
    try:
        app.o_auth.obtain_token(client_id=client_id, client_secret=client_secret,
                                refresh_token=tokens.refresh_token, grant_type="refresh_token")
        fail("a revoked authorization's refresh token still worked")
    except ApiError as error:
        check(error.status_code == 401, f"revoked refresh token: {error.status_code}")

    # 5. Every OAuth answer and the revocation webhooks, against the SDK's models.
    with open(webhooks_path, encoding="utf-8") as handle:
        webhooks = json.load(handle)
    check(len(webhooks) > 0, "no revocation webhook to validate")
    problems, counts = log.check_all()
    for body in webhooks:
        problems += square_sdk_models.check_webhook(body)
        check(json.loads(body)["data"]["object"]["revocation"]["revoker_type"] in ("APPLICATION", "MERCHANT", "SQUARE"),
              "revoker_type")
    check(not problems, "bodies the SDK's models do not declare:\n  " + "\n  ".join(problems))
    check(set(counts) == {"ObtainTokenResponse", "RevokeTokenResponse"}, f"validated {sorted(counts)}")
    print(f"oauth conformance ok: {sum(counts.values())} OAuth responses and {len(webhooks)} webhooks validated")


if __name__ == "__main__":
    main()
