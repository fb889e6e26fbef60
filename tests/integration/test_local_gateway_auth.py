"""`serve --auth iam|jwt` on moto: the local API refuses what the deployed API refuses (tests/template/test_auth.py
asserts the deployed side), and a refused request writes nothing. IAM requests are signed with botocore's SigV4
signer, tokens with an RSA key whose JWKS the authorizer is given."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import jwt
import pytest
import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from hypothesis import given, settings
from hypothesis import strategies as st

from shardboard_tools.local.authorizers import JwtCheck, SigV4Check, TemplateAuthorizer
from shardboard_tools.local.gateway import Gateway, Request, template_routes
from shardboard_tools.local.webapp import LocalApiServer
from shardboard_tools.template import Template
from tests.conftest import examples
from tests.integration.test_local_gateway import with_echo_routes

CREDENTIALS = ReadOnlyCredentials("AKIDLOCALTEST", "local-secret", None)
REGION = "us-east-1"
ISSUER = "https://issuer.example.com/pool"
AUDIENCE = "app-client-1"
VIEW = b'{"id": "images/001.jpg"}'


class http:
    """``requests`` with a timeout: a hung local server fails the test instead of hanging it."""

    @staticmethod
    def post(url: str, **options: Any) -> requests.Response:
        return requests.post(url, timeout=10, **options)

    @staticmethod
    def get(url: str, **options: Any) -> requests.Response:
        return requests.get(url, timeout=10, **options)


def choice(template: Template, **parameters: str) -> Template:
    return Template(template.body, {**template.parameters, **parameters}, template.stack)


@pytest.fixture
def serve(pipeline):
    """``serve(authorizer, **parameters)`` -> the URL of a local API over ``pipeline``'s tables."""
    started = []

    def start(authorizer_for: Any, echo: bool = False, **parameters: str) -> str:
        template = choice(pipeline.runtime.template, **parameters)
        template = with_echo_routes(template) if echo else template
        server = LocalApiServer(Gateway.from_template(template, authorizer_for(template))).start()
        started.append(server)
        return server.url

    yield start
    for server in started:
        server.stop()


# --------------------------------------------------------------------------------------------------------- iam
def iam(clock: Any = time.time) -> Any:
    return lambda template: TemplateAuthorizer(template, "iam", sigv4=SigV4Check(CREDENTIALS, REGION, clock))


def signed(url: str, body: bytes = VIEW, credentials: ReadOnlyCredentials = CREDENTIALS, **options: str) -> AWSRequest:
    """A POST signed as a server-side writer signs it (botocore's SigV4 for execute-api)."""
    request = AWSRequest(method="POST", url=url, data=body, headers={"Content-Type": "application/json"})
    SigV4Auth(credentials, options.get("service", "execute-api"), options.get("region", REGION)).add_auth(request)
    return request


def send(request: AWSRequest, body: bytes | None = None) -> requests.Response:
    return http.post(request.url, data=request.body if body is None else body, headers=dict(request.headers))


def test_a_signed_write_is_recorded(pipeline, serve):
    url = serve(iam(), WriteAuth="iam")
    answer = send(signed(url + "views"))
    assert answer.status_code == 202
    assert pipeline.truth() == {"images/001.jpg": 1}


def test_a_signed_write_with_a_query_and_a_session_token_is_recorded(pipeline, serve):
    token = ReadOnlyCredentials("AKIDSESSION", "session-secret", "session-token")
    url = serve(lambda template: TemplateAuthorizer(template, "iam", sigv4=SigV4Check(token, REGION)), WriteAuth="iam")
    assert send(signed(url + "views", credentials=token)).status_code == 202
    pipeline.aggregate(pipeline.stream_records())
    # POST /views takes no query parameter: a query the signature covers is a hide's (unsorted, an encoded space)
    answer = send(signed(url + "item/hide?reason=a%20b&id=images%2F001.jpg", body=b"", credentials=token))
    assert answer.status_code == 200 and answer.json()["status"] == "hidden", answer.text


def test_a_signed_write_with_an_unknown_query_parameter_is_refused_by_name_and_writes_nothing(pipeline, serve):
    url = serve(iam(), WriteAuth="iam")
    answer = send(signed(url + "views?source=a%20b"))
    assert answer.status_code == 400
    assert answer.json()["message"].startswith("unknown query parameter 'source'"), answer.text
    assert pipeline.truth() == {}


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(lambda url: http.post(url, data=VIEW), id="unsigned"),
        pytest.param(lambda url: send(signed(url), body=b'{"id": "images/001.jpg", "count": 1000}'), id="tampered"),
        pytest.param(
            lambda url: http.post(url, data=VIEW, headers=dict(signed(url + "?x=1").headers)), id="other-query"
        ),
        pytest.param(
            lambda url: send(signed(url, credentials=ReadOnlyCredentials(CREDENTIALS.access_key, "guess", None))),
            id="wrong-secret",
        ),
        pytest.param(
            lambda url: send(signed(url, credentials=ReadOnlyCredentials("AKIDOTHER", "local-secret", None))),
            id="other-key",
        ),
        pytest.param(lambda url: send(signed(url, service="dynamodb")), id="other-service"),
        pytest.param(lambda url: send(signed(url, region="eu-west-1")), id="other-region"),
        pytest.param(
            lambda url: http.post(url, data=VIEW, headers={"Authorization": "AWS4-HMAC-SHA256 Credential=x"}),
            id="header-only",
        ),
    ],
)
def test_a_write_without_a_valid_signature_is_forbidden_and_writes_nothing(pipeline, serve, forge):
    # Given the local API refusing what WriteAuth=iam refuses
    url = serve(iam(), WriteAuth="iam")
    # When a write comes unsigned, changed after signing or signed by someone else
    answer = forge(url + "views")
    # Then API Gateway's 403, and no view recorded
    assert (answer.status_code, answer.json()) == (403, {"message": "Forbidden"})
    assert pipeline.truth() == {}


def test_a_signature_older_than_five_minutes_is_forbidden(pipeline, serve):
    url = serve(iam(clock=lambda: time.time() + 301), WriteAuth="iam")
    assert send(signed(url + "views")).status_code == 403
    assert pipeline.truth() == {}


def test_a_changed_body_hash_header_is_forbidden(pipeline, serve):
    url = serve(iam(), WriteAuth="iam")
    request = signed(url + "views")
    request.headers["X-Amz-Content-SHA256"] = "0" * 64
    assert send(request).status_code == 403


def test_reads_stay_public_and_public_views_open_the_write(pipeline, serve):
    # Given WriteAuth=iam: reads need no signature
    url = serve(iam(), WriteAuth="iam")
    assert http.get(url + "leaderboard").status_code == 404  # no snapshot yet: the function answered
    assert http.get(url + "items/a").status_code == 404
    # Given PublicViews=true as well: POST /views is open, as deployed
    public = serve(iam(), WriteAuth="iam", PublicViews="true")
    assert http.post(public + "views", data=VIEW).status_code == 202


# --------------------------------------------------------------------------------------------------------- jwt
# A key of the issuer's JWKS that is not an RSA key: an EC key (e1) and a symmetric one (h1).
SHARED_SECRET = "a-shared-secret-of-32-bytes-or-more!"


@pytest.fixture(scope="module")
def keys() -> dict[str, Any]:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    elliptic = ec.generate_private_key(ec.SECP256R1())
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key()))
    elliptic_public = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(elliptic.public_key()))
    symmetric = json.loads(jwt.algorithms.HMACAlgorithm.to_jwk(SHARED_SECRET.encode()))
    jwks = [
        {**public, "kid": "k1", "alg": "RS256"},
        {**elliptic_public, "kid": "e1", "alg": "ES256"},
        {**symmetric, "kid": "h1", "alg": "HS256"},
    ]
    return {"private": private, "other": other, "elliptic": elliptic, "jwks": {"keys": jwks}}


def jwt_auth(keys: dict[str, Any]) -> Any:
    check = JwtCheck(ISSUER, (AUDIENCE, "app-client-2"), jwt.PyJWKSet.from_dict(keys["jwks"]))
    return lambda template: TemplateAuthorizer(template, "jwt", jwt=check)


def token(keys: dict[str, Any], key: str = "private", kid: str = "k1", alg: str = "RS256", **claims: Any) -> str:
    now = int(time.time())
    body = {"iss": ISSUER, "aud": AUDIENCE, "exp": now + 300, "iat": now, "scope": "views:write", "sub": "u1"}
    body.update(claims)
    body = {name: value for name, value in body.items() if value is not None}
    signing = SHARED_SECRET if alg == "HS256" else keys[key]
    return jwt.encode(body, signing, algorithm=alg, headers={"kid": kid})


def signed_claims(keys: dict[str, Any], kid: str = "k1", **claims: Any) -> str:
    """A token signed by the issuer's key whose claims PyJWT would not encode (a numeric aud, an infinite exp):
    the payload is signed as given."""
    now = int(time.time())
    body = {"iss": ISSUER, "aud": AUDIENCE, "exp": now + 300, "iat": now, "scope": "views:write", "sub": "u1"}
    body.update(claims)
    payload = json.dumps({name: value for name, value in body.items() if value is not None}).encode()
    return signed_payload(keys, payload, kid)


def signed_payload(keys: dict[str, Any], payload: bytes, kid: str = "k1") -> str:
    return jwt.api_jws.PyJWS().encode(payload, keys["private"], algorithm="RS256", headers={"kid": kid})


def raw_token(header: bytes, payload: bytes, signature: bytes = b"signature") -> str:
    return ".".join(jwt.utils.base64url_encode(part).decode() for part in (header, payload, signature))


UNSIGNED = raw_token(b'{"alg": "none"}', json.dumps({"iss": ISSUER, "aud": AUDIENCE, "exp": 2**40}).encode(), b"")
# An expiry of 5,001 digits: Python's JSON parser refuses integers of more than 4,300.
HUGE_EXP = b'{"iss": "%s", "aud": "%s", "exp": 1%s}' % (ISSUER.encode(), AUDIENCE.encode(), b"0" * 5000)
KID_LIST = b'{"alg": "RS256", "kid": ["k1"]}'
RS256_K1 = b'{"alg": "RS256", "kid": "k1"}'


def jwt_parameters() -> dict[str, str]:
    return {"WriteAuth": "jwt", "JwtIssuer": ISSUER, "JwtAudience": f"{AUDIENCE},app-client-2"}


@pytest.mark.parametrize(
    "bearer",
    [
        pytest.param(lambda keys: f"Bearer {token(keys)}", id="bearer"),
        pytest.param(token, id="bare-token"),
        pytest.param(lambda keys: f"Bearer {token(keys, aud=None, client_id=AUDIENCE)}", id="client-id"),
        pytest.param(lambda keys: f"Bearer {token(keys, aud=['x', 'app-client-2'])}", id="audience-list"),
        pytest.param(lambda keys: f"Bearer {token(keys, scope=None, scp=['views:write'])}", id="scp"),
        pytest.param(lambda keys: f"Bearer {signed_claims(keys, exp=time.time() + 300.5)}", id="fractional-exp"),
    ],
)
def test_a_valid_token_with_the_write_scope_is_recorded(pipeline, serve, keys, bearer):
    url = serve(jwt_auth(keys), **jwt_parameters())
    answer = http.post(url + "views", data=VIEW, headers={"Authorization": bearer(keys)})
    assert answer.status_code == 202
    assert pipeline.truth() == {"images/001.jpg": 1}


@pytest.mark.parametrize(
    "bearer",
    [
        pytest.param(lambda keys: None, id="no-header"),
        pytest.param(lambda keys: "Bearer ", id="empty"),
        pytest.param(lambda keys: "Bearer not.a.jwt", id="garbage"),
        pytest.param(lambda keys: f"Bearer {token(keys, exp=int(time.time()) - 1)}", id="expired"),
        pytest.param(lambda keys: f"Bearer {token(keys, nbf=int(time.time()) + 600)}", id="not-yet"),
        pytest.param(lambda keys: f"Bearer {token(keys, iat=int(time.time()) + 600)}", id="issued-later"),
        pytest.param(lambda keys: f"Bearer {token(keys, exp=None)}", id="no-exp"),
        pytest.param(lambda keys: f"Bearer {token(keys, aud='someone-else')}", id="audience"),
        pytest.param(lambda keys: f"Bearer {token(keys, iss='https://evil.example.com')}", id="issuer"),
        pytest.param(lambda keys: f"Bearer {token(keys, key='other')}", id="other-key-same-kid"),
        pytest.param(lambda keys: f"Bearer {token(keys, kid='k2')}", id="unknown-kid"),
        pytest.param(lambda keys: f"Bearer {token(keys, alg='HS256')}", id="hmac"),
        pytest.param(lambda keys: f"Bearer {tampered(token(keys))}", id="tampered"),
        # Found dropping the connection instead of answering: claims of the wrong type, keys of another type
        pytest.param(lambda keys: f"Bearer {signed_claims(keys, aud=123)}", id="numeric-aud"),
        pytest.param(lambda keys: f"Bearer {signed_claims(keys, aud=[1, 2])}", id="aud-list-of-numbers"),
        pytest.param(lambda keys: f"Bearer {signed_claims(keys, aud=[AUDIENCE, 5])}", id="aud-list-with-a-number"),
        pytest.param(lambda keys: f"Bearer {signed_claims(keys, aud={'a': AUDIENCE})}", id="aud-object"),
        pytest.param(lambda keys: f"Bearer {signed_claims(keys, aud=None, client_id=7)}", id="numeric-client-id"),
        pytest.param(lambda keys: f"Bearer {signed_claims(keys, kid='e1')}", id="kid-of-an-ec-key"),
        pytest.param(lambda keys: f"Bearer {signed_claims(keys, kid='h1')}", id="kid-of-a-symmetric-key"),
        pytest.param(lambda keys: f"Bearer {token(keys, key='elliptic', kid='e1', alg='ES256')}", id="es256"),
        pytest.param(lambda keys: f"Bearer {token(keys, kid='h1', alg='HS256')}", id="hs256-with-its-kid"),
        pytest.param(lambda keys: f"Bearer {signed_claims(keys, scope=5)}", id="numeric-scope"),
        pytest.param(lambda keys: f"Bearer {signed_claims(keys, scope=None, scp={'a': 1})}", id="scp-object"),
        pytest.param(lambda keys: f"Bearer {signed_payload(keys, HUGE_EXP)}", id="exp-of-5001-digits"),
        pytest.param(lambda keys: f"Bearer {signed_claims(keys, exp=float('inf'))}", id="infinite-exp"),
        pytest.param(lambda keys: f"Bearer {signed_claims(keys, iat=float('nan'))}", id="nan-iat"),
        pytest.param(lambda keys: f"Bearer {signed_claims(keys, iss=[ISSUER])}", id="issuer-list"),
        # Found accepted: PyJWT reads a date given as a string as its number; API Gateway takes only a JSON number
        pytest.param(lambda keys: f"Bearer {signed_claims(keys, exp=str(int(time.time()) + 300))}", id="string-exp"),
        pytest.param(lambda keys: f"Bearer {signed_claims(keys, nbf=str(int(time.time()) - 60))}", id="string-nbf"),
        pytest.param(lambda keys: f"Bearer {signed_claims(keys, iat=str(int(time.time()) - 60))}", id="string-iat"),
        pytest.param(lambda keys: f"Bearer {signed_claims(keys, exp=True)}", id="boolean-exp"),
        pytest.param(lambda keys: f"Bearer {UNSIGNED}", id="alg-none"),
        pytest.param(lambda keys: f"Bearer {raw_token(b'[1]', b'{}')}", id="header-not-an-object"),
        pytest.param(lambda keys: f"Bearer {raw_token(KID_LIST, b'{}')}", id="kid-list"),
        pytest.param(lambda keys: f"Bearer {raw_token(RS256_K1, b'[1]')}", id="payload-list"),
        pytest.param(lambda keys: "Bearer a.b.c", id="garbage-segments"),
        pytest.param(lambda keys: "Bearer ....", id="dots"),
        pytest.param(lambda keys: "Bearer \xe9t\xe9.\xe9.\xe9", id="latin-1"),
    ],
)
def test_a_missing_or_invalid_token_is_unauthorized_and_writes_nothing(pipeline, serve, keys, bearer):
    # Given the local API refusing what the JWT authorizer refuses
    url = serve(jwt_auth(keys), **jwt_parameters())
    # When a write comes without a valid token
    value = bearer(keys)
    answer = http.post(url + "views", data=VIEW, headers={"Authorization": value} if value is not None else {})
    # Then the authorizer's 401, with its challenge, and no view recorded
    assert (answer.status_code, answer.json()) == (401, {"message": "Unauthorized"})
    assert answer.headers["www-authenticate"].startswith("Bearer ")
    assert pipeline.truth() == {}


def tampered(value: str) -> str:
    """The same token with a claim changed after signing."""
    header, payload, signature = value.split(".")
    claims = json.loads(jwt.utils.base64url_decode(payload))
    claims["sub"] = str(uuid.uuid4())
    return ".".join([header, jwt.utils.base64url_encode(json.dumps(claims).encode()).decode(), signature])


# The class those tokens belong to: any claims a token signed by the issuer may carry, and any string as a token.
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from([ISSUER, AUDIENCE]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=2),
    max_leaves=5,
)
CLAIMS = st.dictionaries(
    st.sampled_from(["iss", "aud", "client_id", "exp", "nbf", "iat", "scope", "scp", "sub"]), JSON_VALUES, max_size=5
)


@pytest.fixture(scope="module")
def jwt_gate(keys: dict[str, Any]) -> Any:
    """The JWT authorizer as `serve --auth jwt` builds it, and the route it guards: no server, no tables."""
    template = choice(Template.load(), **jwt_parameters())
    (views,) = [route for route in template_routes(template) if route.key == "POST /views"]
    return jwt_auth(keys)(template), views


def decide(jwt_gate: Any, authorization: str) -> Any:
    authorizer, route = jwt_gate
    return authorizer.authorize(route, Request.of("POST", "/views", {"Authorization": authorization}))


def assert_refused_as_api_gateway_refuses(refusal: Any) -> None:
    answer = (refusal.status, json.loads(refusal.body))
    assert answer in [(401, {"message": "Unauthorized"}), (403, {"message": "Forbidden"})]
    # the challenge is one header value whatever the token held: printable ASCII
    assert all(" " <= character <= "~" for value in refusal.headers.values() for character in value)


@given(claims=CLAIMS, kid=st.sampled_from(["k1", "e1", "h1", "unknown"]))
@settings(max_examples=examples(150), deadline=None)
def test_whatever_a_signed_token_claims_it_is_admitted_or_refused_never_a_failure(keys, jwt_gate, claims, kid):
    # When a token signed by the issuer's key carries any claims, under any kid of its JWKS
    decision = decide(jwt_gate, f"Bearer {signed_claims(keys, kid=kid, **claims)}")
    # Then the authorizer decides (it never raises), as API Gateway would answer
    if decision.refusal is not None:
        assert_refused_as_api_gateway_refuses(decision.refusal)
        return
    # And it admits only a token of the issuer's RSA key, with the issuer and a string audience of the stack
    held = {name: value for name, value in {"iss": ISSUER, "aud": AUDIENCE, **claims}.items() if value is not None}
    audience = held["aud"] if "aud" in held else held.get("client_id")
    given = [audience] if isinstance(audience, str) else audience
    assert kid == "k1" and held["iss"] == ISSUER
    assert isinstance(given, list) and all(isinstance(a, str) for a in given)
    assert {AUDIENCE, "app-client-2"} & set(given)


@given(value=st.text(max_size=300))
@settings(max_examples=examples(200), deadline=None)
def test_any_string_as_a_token_is_unauthorized(jwt_gate, value):
    decision = decide(jwt_gate, f"Bearer {value}")
    assert decision.refusal is not None and decision.refusal.status == 401
    assert_refused_as_api_gateway_refuses(decision.refusal)


def test_a_valid_token_without_the_write_scope_is_forbidden(pipeline, serve, keys):
    url = serve(jwt_auth(keys), **jwt_parameters())
    answer = http.post(url + "views", data=VIEW, headers={"Authorization": f"Bearer {token(keys, scope='x')}"})
    assert (answer.status_code, answer.json()) == (403, {"message": "Forbidden"})
    assert pipeline.truth() == {}


def test_the_scope_is_the_template_parameter_and_reads_stay_public(pipeline, serve, keys):
    url = serve(jwt_auth(keys), **jwt_parameters(), JwtWriteScope="shardboard/views.write")
    default_scope = {"Authorization": f"Bearer {token(keys)}"}
    assert http.post(url + "views", data=VIEW, headers=default_scope).status_code == 403
    scoped = {"Authorization": f"Bearer {token(keys, scope='openid shardboard/views.write')}"}
    assert http.post(url + "views", data=VIEW, headers=scoped).status_code == 202
    assert http.get(url + "leaderboard").status_code == 404  # public: the function answered


# ------------------------------------------------------------------------------------- what the function receives
def test_a_route_the_api_body_does_not_declare_is_public_for_get_and_authenticated_otherwise(pipeline, serve, keys):
    # Given a new function's route, absent from the HttpApi body's paths (no security declared)
    url = serve(jwt_auth(keys), echo=True, **jwt_parameters())
    # Then a GET is public, any other method needs the token
    assert http.get(url + "echo/x").status_code == 200
    assert http.post(url + "echo/x", data=b"{}").status_code == 401
    # And the function receives the token's claims and scopes, as the JWT authorizer passes them
    bearer = {"Authorization": f"Bearer {token(keys, groups=['a', 'b'])}"}
    event = http.post(url + "echo/x", data=b"{}", headers=bearer).json()
    received = event["requestContext"]["authorizer"]["jwt"]
    assert received["claims"]["sub"] == "u1" and received["claims"]["groups"] == "[a b]"
    assert received["scopes"] == ["views:write"]


def test_a_signed_request_carries_the_iam_identity(pipeline, serve):
    url = serve(iam(), echo=True, WriteAuth="iam")
    assert http.post(url + "echo/x", data=b"{}").status_code == 403
    event = send(signed(url + "echo/x", body=b"{}")).json()
    assert event["requestContext"]["authorizer"]["iam"]["accessKey"] == CREDENTIALS.access_key


@pytest.mark.parametrize(
    ("parameters", "write"),
    [
        ({"WriteAuth": "iam", "PublicViews": "false"}, ("iam", [])),
        ({"WriteAuth": "jwt", "PublicViews": "false"}, ("jwt", ["views:write"])),
        ({"WriteAuth": "iam", "PublicViews": "true"}, ("public", [])),
        ({"WriteAuth": "jwt", "PublicViews": "true"}, ("public", [])),
    ],
)
def test_each_route_needs_what_the_deployed_api_needs(pipeline, parameters, write):
    # The same four choices tests/template/test_auth.py asserts on the rendered template
    extra = {"JwtIssuer": ISSUER, "JwtAudience": AUDIENCE} if parameters["WriteAuth"] == "jwt" else {}
    template = choice(pipeline.runtime.template, **parameters, **extra)
    authorizer = TemplateAuthorizer(template, parameters["WriteAuth"])
    needs = {route.key: authorizer.requirement(route, route.method) for route in template_routes(template)}
    # The item admin routes take WriteAuth's mechanism with the admin scope; PublicViews never opens them.
    admin = ("iam", []) if parameters["WriteAuth"] == "iam" else ("jwt", ["items:admin"])
    assert needs == {
        "POST /views": write,
        "GET /leaderboard": ("public", []),
        "GET /items/{id+}": ("public", []),
        "GET /item": ("public", []),
        "GET /items": ("public", []),
        "GET /rank": ("public", []),
        "GET /around": ("public", []),
        "GET /boards": ("public", []),
        "GET /shardboard.js": ("public", []),
        "PUT /item": admin,
        "POST /item/hide": admin,
        "POST /item/unhide": admin,
        "DELETE /item": admin,
    }


# ---------------------------------------------------------------------------------------------- item admin routes
CAT = b'{"title": "A cat"}'


def items_in(pipeline) -> list[dict[str, Any]]:
    table = pipeline.settings.items_table
    return list(pipeline.runtime.dynamodb.scan(TableName=table, ConsistentRead=True)["Items"])


def signed_put(url: str, body: bytes = CAT) -> requests.Response:
    request = AWSRequest(method="PUT", url=url, data=body, headers={"Content-Type": "application/json"})
    SigV4Auth(CREDENTIALS, "execute-api", REGION).add_auth(request)
    return requests.put(request.url, data=body, headers=dict(request.headers), timeout=10)


@pytest.mark.parametrize("public", ["false", "true"])
def test_put_item_needs_a_signature_with_iam_even_with_public_views(pipeline, serve, public):
    url = serve(iam(), WriteAuth="iam", PublicViews=public)
    # An unsigned put is refused by the gateway and writes nothing
    assert requests.put(url + "item?id=a%2Fb", data=CAT, timeout=10).status_code == 403
    assert items_in(pipeline) == []
    # A signed one is stored, and the item reads back publicly
    assert signed_put(url + "item?id=a%2Fb").status_code == 200
    assert http.get(url + "item?id=a%2Fb").json()["meta"] == {"title": "A cat"}


def test_put_item_needs_the_admin_scope_with_jwt(pipeline, serve, keys):
    url = serve(jwt_auth(keys), **jwt_parameters(), PublicViews="true")
    # A token with the views scope only (what POST /views needs) is forbidden, and nothing is written
    writer = {"Authorization": f"Bearer {token(keys)}"}
    assert requests.put(url + "item?id=a", data=CAT, headers=writer, timeout=10).status_code == 403
    assert requests.put(url + "item?id=a", data=CAT, timeout=10).status_code == 401
    assert items_in(pipeline) == []
    # A token with JwtAdminScope may put
    admin = {"Authorization": f"Bearer {token(keys, scope='items:admin')}"}
    answer = requests.put(url + "item?id=a", data=CAT, headers=admin, timeout=10)
    assert answer.status_code == 200 and answer.json()["rev"] == 1


@pytest.mark.parametrize("public", ["false", "true"])
def test_hide_needs_a_signature_with_iam_even_with_public_views(pipeline, serve, public):
    url = serve(iam(), WriteAuth="iam", PublicViews=public)
    assert signed_put(url + "item?id=a").status_code == 200
    before = items_in(pipeline)
    # An unsigned hide is refused by the gateway and writes nothing
    assert requests.post(url + "item/hide?id=a&reason=spam", timeout=10).status_code == 403
    assert requests.post(url + "item/unhide?id=a", timeout=10).status_code == 403
    assert requests.delete(url + "item?id=a", timeout=10).status_code == 403
    assert items_in(pipeline) == before
    # A signed one is carried out
    request = AWSRequest(method="POST", url=url + "item/hide?id=a&reason=spam")
    SigV4Auth(CREDENTIALS, "execute-api", REGION).add_auth(request)
    answer = requests.post(request.url, headers=dict(request.headers), timeout=10)
    assert answer.status_code == 200 and answer.json()["status"] == "hidden"
