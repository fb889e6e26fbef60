"""Who may call a route of the local API: what the deployed HTTP API's authorization would accept (``serve --auth``).

A route's requirement comes from the template's OpenAPI body as deployed (``WriteAuth``, ``PublicViews`` decided):
``[]`` is public, ``AWS_IAM`` is SigV4, a ``jwt`` authorizer is a bearer token. A route the body does not declare
is public for GET and needs the chosen authentication for any other method.

- **iam**: the request must carry a SigV4 signature for service ``execute-api`` in the API's region, made with the
  credentials of the environment ``serve`` started in, that botocore's signer reproduces from the request as it
  arrived (method, path, query, signed headers, SHA-256 of the body), dated within 5 minutes. Anything else is
  403 ``{"message": "Forbidden"}``, as API Gateway answers.
- **jwt**: ``Authorization: Bearer <JWT>`` (or the bare token), RSA-signed by an RSA key of the issuer's JWKS
  (``--jwks FILE``, else discovered from ``<issuer>/.well-known/openid-configuration`` as API Gateway does), ``iss``
  = the issuer, ``aud`` (or ``client_id`` when there is no ``aud``: a string or a list of strings) one of the
  audiences, ``exp`` in the future, ``nbf`` and ``iat`` in the past, each a JSON number (not a string): else 401
  ``{"message": "Unauthorized"}``, as is any token PyJWT cannot read. A valid token with none of the route's scopes
  (``scope`` or ``scp`` claim) is 403 ``{"message": "Forbidden"}``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
import time
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials

from shardboard_tools.local.gateway import (
    ACCOUNT_ID,
    Allowed,
    Decision,
    Reply,
    Request,
    Route,
    security_schemes,
)
from shardboard_tools.template import Template

FORBIDDEN = Reply.json(403, {"message": "Forbidden"})
# SigV4: a signature is good for 5 minutes either side of the server's clock.
SIGNATURE_SKEW_SECONDS = 300
SIGV4 = re.compile(r"AWS4-HMAC-SHA256 Credential=([^,\s]+),\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]{64})")
# API Gateway's JWT authorizer accepts RSA signatures only.
RSA_ALGORITHMS = ("RS256", "RS384", "RS512")


def unauthorized(reason: str) -> Reply:
    # The reason may quote the token: kept to printable ASCII without quotes, so it stays one header value.
    description = re.sub(r'[^ -~]|["\\]', "?", reason)[:200]
    challenge = f'Bearer scope="" error="invalid_token" error_description="{description}"'
    return Reply.json(401, {"message": "Unauthorized"}, {"www-authenticate": challenge})


@dataclass(frozen=True)
class Refused:
    refusal: Reply
    context: dict[str, Any] | None = None


# ---------------------------------------------------------------------------------------------------------- SigV4
@dataclass(frozen=True)
class SigV4Check:
    """Verify a request's SigV4 signature with ``credentials``, for execute-api in ``region``."""

    credentials: ReadOnlyCredentials
    region: str
    clock: Callable[[], float] = time.time

    def verify(self, request: Request) -> bool:
        """Whether the request carries this server's valid signature; anything unreadable in it is a refusal."""
        try:
            return self._verify(request)
        except Exception:  # a request is anyone's input (a Host botocore cannot parse): refused, never a 500
            return False

    def _verify(self, request: Request) -> bool:
        signed = self._signed(request)
        if signed is None:
            return False
        names, signature = signed
        rebuilt = AWSRequest(
            method=request.method,
            url=f"http://{request.header('host')}{request.target}",
            headers={name: str(request.header(name)) for name in names},
            data=request.body,
        )
        rebuilt.context["timestamp"] = request.header("x-amz-date")
        signer = SigV4Auth(self.credentials, "execute-api", self.region)
        if signer.signed_headers(signer.headers_to_sign(rebuilt)) != ";".join(names):
            return False  # a header botocore never signs was declared signed
        expected = signer.signature(signer.string_to_sign(rebuilt, signer.canonical_request(rebuilt)), rebuilt)
        return hmac.compare_digest(str(expected), str(signature))

    def _signed(self, request: Request) -> tuple[list[str], str] | None:
        """The signed header names and the signature, when the request's credential, date, token and body hash are
        this server's; else None."""
        found = SIGV4.fullmatch((request.header("authorization") or "").strip())
        stamp = request.header("x-amz-date") or ""
        if found is None or not self._fresh(stamp):
            return None
        credential, signed, signature = found.groups()
        names = signed.split(";")
        declared = request.header("x-amz-content-sha256")
        good = (
            credential == f"{self.credentials.access_key}/{stamp[:8]}/{self.region}/execute-api/aws4_request"
            and (not self.credentials.token or request.header("x-amz-security-token") == self.credentials.token)
            # a signed body hash that is not the body's: the body was changed after signing
            and declared in (None, hashlib.sha256(request.body).hexdigest())
            and "host" in names
            and all(request.header(name) is not None for name in names)
        )
        return (names, signature) if good else None

    def _fresh(self, stamp: str) -> bool:
        try:
            signed_at = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC).timestamp()
        except ValueError:
            return False
        return abs(self.clock() - signed_at) <= SIGNATURE_SKEW_SECONDS

    def context(self) -> dict[str, Any]:
        """requestContext.authorizer of a signed request, as API Gateway fills it for IAM."""
        key = self.credentials.access_key
        return {
            "iam": {
                "accessKey": key,
                "accountId": ACCOUNT_ID,
                "callerId": key,
                "cognitoIdentity": None,
                "principalOrgId": None,
                "userArn": f"arn:aws:iam::{ACCOUNT_ID}:user/local",
                "userId": key,
            }
        }


# ------------------------------------------------------------------------------------------------------------ JWT
@dataclass(frozen=True)
class JwtCheck:
    """A JWT authorizer's validation: ``keys`` maps a key id to its public key (a JWKS)."""

    issuer: str
    audiences: tuple[str, ...]
    keys: Any  # jwt.PyJWKSet, or a PyJWKClient fetching the issuer's

    @classmethod
    def of(cls, issuer: str, audiences: Sequence[str], jwks_file: Path | None) -> JwtCheck:
        import jwt

        if jwks_file is not None:
            return cls(issuer, tuple(audiences), jwt.PyJWKSet.from_dict(json.loads(jwks_file.read_text("utf-8"))))
        return cls(issuer, tuple(audiences), jwt.PyJWKClient(discover_jwks_uri(issuer)))

    def claims(self, request: Request) -> dict[str, Any] | str:
        """The token's claims, or why it is refused."""
        import jwt

        token = bearer_token(request)
        if not token:
            return "no token"
        try:
            claims = self._verified(token)
        except Exception as error:  # a token is anyone's input: whatever breaks PyJWT on it is a 401, never a 500
            return f"the token is not valid: {error}" if isinstance(error, jwt.PyJWTError) else "the token is not valid"
        if isinstance(claims, str):
            return claims
        if not self._audience_ok(claims):
            return "the token does not have a valid audience"
        if token_scopes(claims) is None:
            return "the token's scope is neither a string nor a list of strings"
        return claims

    def _verified(self, token: str) -> dict[str, Any] | str:
        """The claims of a token signed by a key of the issuer, current and of this issuer (raises PyJWTError)."""
        import jwt

        header = jwt.get_unverified_header(token)
        if header.get("alg") not in RSA_ALGORITHMS:
            return "the token is not signed with an RSA algorithm"
        key = self._key(str(header.get("kid")))
        if key is None:
            return "the token's kid is not an RSA key of the issuer"
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=[header["alg"]],
            issuer=self.issuer,
            options={"require": ["exp", "iss"], "verify_aud": False},  # aud or client_id: checked after
        )
        # PyJWT reads a date given as a string ("exp": "9999999999") as its number; API Gateway, as RFC 7519's
        # NumericDate, only a JSON number.
        for name in ("exp", "nbf", "iat"):
            if name in claims and not _numeric_date(claims[name]):
                return f"the token's {name} is not a number"
        return claims

    def _key(self, kid: str) -> Any:
        import jwt

        try:
            found = self.keys.get_signing_key(kid) if isinstance(self.keys, jwt.PyJWKClient) else self.keys[kid]
        except (KeyError, jwt.PyJWKClientError):
            return None
        # A JWKS may also hold EC or symmetric keys: only an RSA one can check an RSA signature.
        return found.key if found.key_type == "RSA" else None

    def _audience_ok(self, claims: Mapping[str, Any]) -> bool:
        # API Gateway reads client_id only when the token has no aud (Cognito access tokens). An audience is a
        # string (RFC 7519): a number or an object is no audience, even one that prints as a configured one.
        audience = claims.get("aud", claims.get("client_id"))
        given = [audience] if isinstance(audience, str) else audience
        if not isinstance(given, list) or not all(isinstance(a, str) for a in given):
            return False
        return any(a in self.audiences for a in given)


def _numeric_date(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def bearer_token(request: Request) -> str:
    """The token of ``Authorization: Bearer <token>``, or of a bare ``Authorization: <token>`` (both accepted)."""
    value = (request.header("authorization") or "").strip()
    return value[len("bearer ") :].strip() if value[: len("bearer ")].lower() == "bearer " else value


def token_scopes(claims: Mapping[str, Any]) -> list[str] | None:
    """``scope`` (space-separated) or ``scp`` (a list or a string); None when it is neither (a malformed token)."""
    scopes = claims.get("scope", claims.get("scp"))
    if scopes is None:
        return []
    if isinstance(scopes, str):
        return scopes.split()
    if isinstance(scopes, list) and all(isinstance(scope, str) for scope in scopes):
        return scopes
    return None


def discover_jwks_uri(issuer: str) -> str:
    """The issuer's JWKS address from its OpenID discovery document, as API Gateway finds it."""
    url = f"{issuer.rstrip('/')}/.well-known/openid-configuration"
    if not url.startswith("https://"):
        raise ValueError(f"issuer must be an https URL, got {issuer!r}")
    with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 - https only, checked above
        return str(json.load(answer)["jwks_uri"])


# ------------------------------------------------------------------------------------------- the API's authorizer
class TemplateAuthorizer:
    """Each route's requirement from the template's OpenAPI body, checked by SigV4 or JWT.

    Built from the template the gateway's routes come from; :meth:`check` before serving finds a route it could not
    check, so a disagreement stops the server's start instead of refusing every write.
    """

    def __init__(self, template: Template, mode: str, sigv4: SigV4Check | None = None, jwt: JwtCheck | None = None):
        self.mode = mode  # iam or jwt: what a route the body does not declare needs (unless it is a GET)
        self.schemes = security_schemes(template)
        self.sigv4 = sigv4
        self.jwt = jwt

    def check(self, routes: Iterable[Route]) -> None:
        """ValueError naming the first route whose requirement this authorizer cannot check: a security scheme the
        body does not define, a JWT route with no JWT check, a SigV4 route with no SigV4 check."""
        for route in routes:
            for method in {route.method, "POST"} if route.method == "ANY" else {route.method}:
                scheme, _ = self.requirement(route, method)
                if (scheme == "iam" and self.sigv4 is None) or (scheme == "jwt" and self.jwt is None):
                    raise ValueError(f"route {route.key} needs {scheme} authentication, not {self.mode}")

    def authorize(self, route: Route, request: Request) -> Decision:
        try:
            scheme, scopes = self.requirement(route, request.method)
        except ValueError:  # a route of another template than this authorizer's: refused, as an unknown one would be
            return Refused(FORBIDDEN)
        if scheme == "public":
            return Allowed()
        if scheme == "iam":
            if self.sigv4 is None or not self.sigv4.verify(request):
                return Refused(FORBIDDEN)
            return Allowed(self.sigv4.context())
        return self._jwt_decision(request, scopes)

    def _jwt_decision(self, request: Request, scopes: list[str]) -> Decision:
        if self.jwt is None:
            return Refused(FORBIDDEN)
        claims = self.jwt.claims(request)
        if isinstance(claims, str):
            return Refused(unauthorized(claims))
        held = token_scopes(claims) or []
        if scopes and not set(scopes) & set(held):
            return Refused(FORBIDDEN)
        return Allowed({"jwt": {"claims": {k: _claim(v) for k, v in claims.items()}, "scopes": held or None}})

    def requirement(self, route: Route, method: str) -> tuple[str, list[str]]:
        """("public" | "iam" | "jwt", the scopes a JWT needs) for a ``method`` request on ``route``."""
        if route.security is None:
            return ("public", []) if method == "GET" else (self.mode, [])
        if not route.security or not route.security[0]:
            return "public", []
        name, scopes = next(iter(route.security[0].items()))
        scheme = self.schemes.get(name, {})
        if scheme.get("x-amazon-apigateway-authtype") == "awsSigv4":
            return "iam", []
        if (scheme.get("x-amazon-apigateway-authorizer") or {}).get("type") == "jwt":
            return "jwt", list(scopes)
        raise ValueError(f"route {route.key}: security scheme {name!r} is not one the local API knows")


def _claim(value: Any) -> str:
    """Claims reach the function as strings (a list as ``[a b]``), as API Gateway passes them."""
    if isinstance(value, list):
        return "[" + " ".join(str(v) for v in value) + "]"
    return value if isinstance(value, str) else json.dumps(value)
