"""What a request to the API functions holds, read strictly: the raw query string's values and the JSON body. A
value that cannot be read is BadInput (a 400), never a 500.
"""

from __future__ import annotations

import base64
import hmac
import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qs

from shardboard.domain import validation
from shardboard.domain.validation import BadInput


def optional_query_value(raw_query: str | None, name: str) -> str | None:
    """``query_value``, or None when ``name`` is absent."""
    return query_value(raw_query, name) if name in query_values(raw_query) else None


def query_value(raw_query: str | None, name: str) -> str:
    """The one value of ``name`` in a raw query string, percent-decoded as UTF-8, or BadInput.

    Read from ``rawQueryString``, never ``queryStringParameters``: API Gateway joins repeated names there with
    commas, so an id holding a comma could not be told from two ids.
    """
    found = query_values(raw_query).get(name, [])
    if not found:
        raise BadInput(f"missing query parameter: {name}")
    if len(found) > 1:
        raise BadInput(f"query parameter {name} given {len(found)} times; give it once")
    return found[0]


def query_values(raw_query: str | None) -> dict[str, list[str]]:
    """Every name of a raw query string with its values, percent-decoded as UTF-8 (strictly), or BadInput."""
    try:
        return parse_qs(raw_query or "", keep_blank_values=True, strict_parsing=bool(raw_query), errors="strict")
    except ValueError as error:  # a field without '=', or bytes that are not UTF-8
        raise BadInput(f"query string is malformed: {str(error).splitlines()[0]}") from None


def known_query(raw_query: str | None, takes: Sequence[str]) -> dict[str, list[str]]:
    """``query_values``, or BadInput naming every parameter the route does not take (``takes``): an ignored
    parameter would answer another question than the one asked (``GET /around?window=24h`` answering all time)."""
    values = query_values(raw_query)
    unknown = [name for name in values if name not in takes]
    if unknown:
        listed = ", ".join(repr(name) for name in unknown)
        offered = f"takes only {', '.join(takes)}" if takes else "takes no query parameters"
        raise BadInput(f"unknown query parameter {listed}: this route {offered}")
    return values


def once(values: dict[str, list[str]], name: str) -> str:
    """The value of an optional parameter given at most once ("" when absent)."""
    found = values.get(name, [])
    if len(found) > 1:
        raise BadInput(f"query parameter {name} given {len(found)} times; give it once")
    return found[0] if found else ""


# What the CDN adds to an origin request (template.yaml, Distribution): its token, and the visitor's "address:port".
EDGE_TOKEN_HEADER = "x-shardboard-edge"  # noqa: S105 - a header's name
VIEWER_ADDRESS_HEADER = "cloudfront-viewer-address"


def client_address(peer: str, headers: Mapping[str, str], edge_token: str) -> str:
    """The client's address: the peer's (API Gateway's sourceIp), unless the request came through the stack's CDN,
    whose token vouches for the visitor's address it forwards (``198.51.100.10:46532``, ``2001:db8::1:46532``).
    Without the token the header is whatever a client wrote, and is ignored."""
    forwarded = headers.get(VIEWER_ADDRESS_HEADER, "")
    token = headers.get(EDGE_TOKEN_HEADER, "")
    if not (edge_token and forwarded and ":" in forwarded and hmac.compare_digest(token.encode(), edge_token.encode())):
        return peer
    return forwarded.rsplit(":", 1)[0].strip("[]")


def beacon(event: dict[str, Any]) -> bool:
    """Whether the request's body is ``text/plain``: what a page's navigator.sendBeacon(url, string) sends (a CORS
    simple request), as opposed to a program's JSON."""
    headers = event.get("headers") or {}
    given = next((value for name, value in headers.items() if name.lower() == "content-type"), "")
    return str(given).split(";", 1)[0].strip().lower() == "text/plain"


def json_request(event: dict[str, Any]) -> dict[str, Any]:
    """The event with its body as JSON text, whatever its Content-Type (a beacon sends text/plain), as POST /views
    has always read it; Powertools' validation would otherwise parse forms or refuse other types.

    A base64 body (API Gateway sends one for binary types) is decoded here; bytes that are not UTF-8 become lone
    surrogates (``surrogateescape``), which JSON parsing and every field's rule refuse, so such a body gets a 400.
    """
    headers = {name: value for name, value in (event.get("headers") or {}).items() if name.lower() != "content-type"}
    request = {**event, "headers": {**headers, "content-type": "application/json"}}
    if event.get("isBase64Encoded") and event.get("body"):
        raw = base64.b64decode(event["body"])
        request.update(body=raw.decode("utf-8", errors="surrogateescape"), isBase64Encoded=False)
    return request


def json_body(text: str) -> dict[str, Any]:
    """The body of a route that takes one (the resolver's ``json_body_deserializer``): a JSON object, or BadInput
    (400) before any model sees it. Powertools would hand a model a JSON array's first element (its rule for form
    fields), and an integer of over 4,300 digits or deep nesting would raise in parsing (a 500); text that is not
    JSON raises json.JSONDecodeError, which Powertools answers as invalid JSON."""
    value = validation.json_value(text, "body")
    if not isinstance(value, dict):
        raise BadInput(f"body must be a JSON object, got {validation.json_kind(value)}")
    # Parsed again, now that json_value has bounded its depth and numbers, to see every key: json.loads keeps the
    # last of a repeated key, and a filter in front of the API that reads the first would judge another request.
    json.loads(text, object_pairs_hook=_keys_once)
    return value


def _keys_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """One JSON object's members, or BadInput naming a key it repeats (at any depth)."""
    found: dict[str, Any] = {}
    for key, member in pairs:
        if key in found:
            raise BadInput(f"body has the key {key!r} more than once; send each key once")
        found[key] = member
    return found
