"""Validates every body the simulator sends against the official SDK's Pydantic models.

`ResponseLog` is an httpx response hook: it keeps each response the SDK receives. `check_all`
validates each body against the SDK's model for its endpoint (`square.types`), strictly (types,
enums, required members), and walks the validated model beside the raw JSON: a key the model
does not declare fails unless it is on `ALLOWED_UNDECLARED` below.
"""
import importlib
import json
import re
import sys

import pydantic


# The conformance scripts' verdict: the first mismatch ends the run with status 1.
def fail(message: str) -> None:
    print(f"CONFORMANCE FAILURE: {message}", file=sys.stderr)
    sys.exit(1)


def check(condition: bool, message: str) -> None:
    if not condition:
        fail(message)


# Keys Square itself sends that its models do not declare. Keep these lists short and commented.
ALLOWED_UNDECLARED = {
    # Square's own responses carry `created_at` on catalog objects; the CatalogObject schema
    # has no such member (docs/square-catalog.md, "created_at shows up in real responses").
    "created_at",
}
ALLOWED_UNDECLARED_PATHS = {
    # `data.id` of a webhook: in Square's own CatalogVersionUpdatedEvent example (api.json,
    # "often empty"), absent from the SDK's CatalogVersionUpdatedEventData.
    "$.data.id",
}

# (method, path pattern) -> the SDK model of the response body, as module.Class of square.types.
ENDPOINT_MODELS = [
    ("GET", r"^/v2/catalog/list$", "list_catalog_response.ListCatalogResponse"),
    ("POST", r"^/v2/catalog/search$", "search_catalog_objects_response.SearchCatalogObjectsResponse"),
    ("POST", r"^/v2/catalog/batch-upsert$", "batch_upsert_catalog_objects_response.BatchUpsertCatalogObjectsResponse"),
    ("POST", r"^/v2/catalog/batch-retrieve$", "batch_get_catalog_objects_response.BatchGetCatalogObjectsResponse"),
    ("POST", r"^/v2/catalog/batch-delete$", "batch_delete_catalog_objects_response.BatchDeleteCatalogObjectsResponse"),
    ("GET", r"^/v2/catalog/object/[^/]+$", "get_catalog_object_response.GetCatalogObjectResponse"),
    ("POST", r"^/v2/catalog/object$", "upsert_catalog_object_response.UpsertCatalogObjectResponse"),
    ("DELETE", r"^/v2/catalog/object/[^/]+$", "delete_catalog_object_response.DeleteCatalogObjectResponse"),
    ("POST", r"^/v2/catalog/images$", "create_catalog_image_response.CreateCatalogImageResponse"),
    ("PUT", r"^/v2/catalog/images/[^/]+$", "update_catalog_image_response.UpdateCatalogImageResponse"),
    ("POST", r"^/v2/catalog/update-item-taxes$", "update_item_taxes_response.UpdateItemTaxesResponse"),
    ("POST", r"^/v2/catalog/update-item-modifier-lists$",
     "update_item_modifier_lists_response.UpdateItemModifierListsResponse"),
    ("GET", r"^/v2/locations$", "list_locations_response.ListLocationsResponse"),
    ("POST", r"^/oauth2/token$", "obtain_token_response.ObtainTokenResponse"),
    ("POST", r"^/oauth2/revoke$", "revoke_token_response.RevokeTokenResponse"),
]

WEBHOOK_MODELS = {
    "catalog.version.updated": "catalog_version_updated_event.CatalogVersionUpdatedEvent",
    "oauth.authorization.revoked": "oauth_authorization_revoked_event.OauthAuthorizationRevokedEvent",
}


def model(name: str):
    module, cls = name.rsplit(".", 1)
    return getattr(importlib.import_module(f"square.types.{module}"), cls)


def undeclared(raw, obj, path: str, out: list) -> None:
    """Appends the path of every key of `raw` that the validated model `obj` does not declare."""
    if isinstance(obj, pydantic.BaseModel):
        if not isinstance(raw, dict):
            out.append(f"{path}: expected an object")
            return
        names = {(field.alias or name): name for name, field in type(obj).model_fields.items()}
        for key, value in raw.items():
            if key not in names:
                if key not in ALLOWED_UNDECLARED and f"{path}.{key}" not in ALLOWED_UNDECLARED_PATHS:
                    out.append(f"{path}.{key}")
                continue
            undeclared(value, getattr(obj, names[key]), f"{path}.{key}", out)
    elif isinstance(obj, (list, tuple)) and isinstance(raw, list):
        for index, (raw_item, item) in enumerate(zip(raw, obj)):
            undeclared(raw_item, item, f"{path}[{index}]", out)
    elif isinstance(obj, dict) and isinstance(raw, dict):
        for key, value in raw.items():
            undeclared(value, obj.get(key), f"{path}.{key}", out)


def validate(model_name: str, body: bytes, where: str) -> list:
    """The problems of one body: a validation error, or the undeclared keys."""
    try:
        raw = json.loads(body)
    except ValueError as error:
        return [f"{where}: not JSON ({error})"]
    try:
        validated = model(model_name).model_validate(raw)
    except pydantic.ValidationError as error:
        return [f"{where}: {model_name.rsplit('.', 1)[1]} refuses it: {error}"]
    out: list = []
    undeclared(raw, validated, "$", out)
    return [f"{where}: undeclared key {key}" for key in out]


class ResponseLog:
    """An httpx response hook that keeps (method, path, status, body) of every response."""

    def __init__(self) -> None:
        self.responses = []

    def __call__(self, response) -> None:
        response.read()
        self.responses.append((response.request.method, response.request.url.path, response.status_code,
                               response.content))

    def check_all(self) -> tuple:
        """(problems, counts by model): every response validated against its endpoint's model."""
        problems, counts = [], {}
        for method, path, status, body in self.responses:
            names = [name for m, pattern, name in ENDPOINT_MODELS if m == method and re.match(pattern, path)]
            if not names:
                problems.append(f"{method} {path}: no SDK model known for this endpoint")
                continue
            problems += validate(names[0], body, f"{method} {path} ({status})")
            short = names[0].rsplit(".", 1)[1]
            counts[short] = counts.get(short, 0) + 1
        return problems, counts


def check_webhook(body: str) -> list:
    event_type = json.loads(body).get("type", "")
    name = WEBHOOK_MODELS.get(event_type)
    if name is None:
        return [f"webhook {event_type}: no SDK model known"]
    return validate(name, body.encode(), f"webhook {event_type}")
