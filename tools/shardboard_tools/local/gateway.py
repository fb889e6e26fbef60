"""A local API Gateway (HTTP API): every ``HttpApi`` route of template.yaml, served by the functions' own handlers.

Routes are read from the ``HttpApi`` events of each ``AWS::Serverless::Function``, so a route added to the template is
served with no code change. Each request becomes the payload format 2.0 event API Gateway sends, and is dispatched by
API Gateway's rules (docs: "Routing API requests" of HTTP APIs):

- the most specific route wins: a full match before a greedy ``{name+}`` one, a method before ``ANY``; a greedy
  variable takes one or more characters, ``/`` included; no route for the path and method answers
  404 ``{"message": "Not Found"}`` (an HTTP API has no "method not allowed": a route is a method and a path);
- ``rawPath``, ``requestContext.http.path`` and ``pathParameters`` arrive percent-decoded and cut at the first decoded
  ``?`` (``/items/a%3Fb`` is routed and handed over as ``/items/a``), ``rawQueryString`` as sent,
  ``queryStringParameters`` decoded with repeated names joined by commas, header names in lower case (repeated ones
  joined by commas) and cookies in their own list;
- a body is passed as text only for ``text/*``, ``application/json``, ``application/xml`` and
  ``application/javascript`` content types; any other body (``curl -d``'s form type, no type) arrives base64-encoded
  with ``isBase64Encoded`` true;
- a function that raises answers 500 ``{"message": "Internal Server Error"}``; a function's answer without a
  ``statusCode`` is a 200 JSON body (the 2.0 format's inference);
- the functions take one event at a time, concurrent requests queue for their turn: a handler keeps the event it
  answers in process-wide state (Powertools' resolvers share ``BaseRouter.current_event``, a class attribute, and
  each keeps its route in an instance dict), which a Lambda execution environment never shares between two events.

Who may call a route is an :class:`Authorizer`'s decision (local/authorizers.py). Routes that are not deployed
(the leaderboard page, an OpenAPI document) are added with :meth:`Gateway.add_local_route`.
"""

from __future__ import annotations

import base64
import functools
import importlib
import json
import logging
import re
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import parse_qsl, unquote, urlsplit

from shardboard_tools.lambda_model.context import LocalContext, invoke
from shardboard_tools.template import Template

Handler = Callable[[dict[str, Any], Any], Any]
log = logging.getLogger(__name__)

# Content types API Gateway hands to the function as text; every other body is base64-encoded.
TEXT_TYPES = ("application/json", "application/xml", "application/javascript")
DEFAULT_ROUTE = "$default"
ACCOUNT_ID = "000000000000"
# One for the process, as the state it guards is (the module docstring says why).
_ONE_EVENT_AT_A_TIME = threading.Lock()


@dataclass(frozen=True)
class Request:
    """One HTTP request as the server received it: ``target`` is the path and query, still percent-encoded."""

    method: str
    target: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    source_ip: str = "127.0.0.1"

    @classmethod
    def of(cls, method: str, target: str, headers: Mapping[str, str] | None = None, body: bytes = b"") -> Request:
        return cls(method.upper(), target, tuple((headers or {}).items()), body)

    def header(self, name: str) -> str | None:
        """The value of a header (case-insensitive); repeated headers joined by commas, as API Gateway does."""
        values = [value for key, value in self.headers if key.lower() == name.lower()]
        return ",".join(values) if values else None

    @property
    def path(self) -> str:
        """The decoded path: what API Gateway routes on and hands to the function. Like API Gateway (live captures,
        docs/proposals/items-and-ranks.md section 7), it ends at a decoded ``?``: an id holding ``?`` cannot travel in a
        path, which is why the item routes take ids in the query string."""
        return unquote(urlsplit(self.target).path).split("?", 1)[0]


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    cookies: tuple[str, ...] = ()  # one Set-Cookie header each

    @classmethod
    def json(cls, status: int, document: Any, headers: Mapping[str, str] | None = None) -> Reply:
        return cls(
            status,
            {"Content-Type": "application/json", **(headers or {})},
            json.dumps(document, separators=(",", ":")).encode(),
        )


NOT_FOUND = Reply.json(404, {"message": "Not Found"})
INTERNAL_ERROR = Reply.json(500, {"message": "Internal Server Error"})


@dataclass(frozen=True)
class Route:
    """One route of the HTTP API: ``GET /items/{id+}`` served by ``handler`` (a dotted path) of ``function``."""

    method: str  # GET, POST, ... or ANY
    path: str  # as the template writes it; "$default" for the catch-all route
    function: str
    handler: str
    security: tuple[dict[str, list[str]], ...] | None = None  # the OpenAPI body's requirement; None: not declared

    @property
    def key(self) -> str:
        return DEFAULT_ROUTE if self.path == DEFAULT_ROUTE else f"{self.method} {self.path}"

    @property
    def greedy(self) -> bool:
        return self.path.endswith("+}")

    def parameters(self, method: str, path: str) -> dict[str, str] | None:
        """The path parameters when this route takes the request, else None."""
        if self.method not in {"ANY", method}:
            return None
        if self.path == DEFAULT_ROUTE:
            return {}
        pattern, names = _pattern(self.path)
        found = pattern.fullmatch(path)
        return None if found is None else dict(zip(names, found.groups(), strict=True))

    def specificity(self) -> tuple[int, int, int]:
        """Higher is more specific: a full match over a greedy one, more literal segments, a method over ANY."""
        if self.path == DEFAULT_ROUTE:
            return (-1, 0, 0)
        literal = sum(1 for segment in self.path.strip("/").split("/") if not segment.startswith("{"))
        return (0 if self.greedy else 1, literal, 0 if self.method == "ANY" else 1)


@functools.cache
def _pattern(path: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
    """``/items/{id+}`` -> a regular expression and its variables: ``{name}`` takes one segment, ``{name+}`` one or
    more characters (``/`` included). DOTALL: the path is decoded, and an id may hold a newline."""
    parts, names = [], []
    for literal, name, greedy in re.findall(r"([^{]*)(?:\{([^}]+?)(\+?)\})?", path):
        parts.append(re.escape(literal))
        if name:
            names.append(name)
            parts.append("(.+)" if greedy else "([^/]+)")
    return re.compile("".join(parts), re.DOTALL), tuple(names)


def template_routes(template: Template) -> list[Route]:
    """Every route the template deploys: the ``HttpApi`` events of its functions, with their security as deployed."""
    resources = template.body.get("Resources", {})
    paths = _openapi_paths(template)
    routes = []
    for function, resource in resources.items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        properties = resource.get("Properties", {})
        for event in (properties.get("Events") or {}).values():
            if event.get("Type") != "HttpApi":
                continue
            spec = event.get("Properties") or {}
            method = str(spec.get("Method", "ANY")).upper().replace("X-AMAZON-APIGATEWAY-ANY-METHOD", "ANY")
            path = str(spec.get("Path", DEFAULT_ROUTE))
            operation = "x-amazon-apigateway-any-method" if method == "ANY" else method.lower()
            security = paths.get(path, {}).get(operation, {}).get("security")
            routes.append(
                Route(method, path, function, str(properties["Handler"]), _requirements(security)),
            )
    return routes


def _openapi_paths(template: Template) -> dict[str, Any]:
    """The paths of the HTTP API's OpenAPI body, with the deployment's conditions decided."""
    for resource in template.body.get("Resources", {}).values():
        if resource.get("Type") == "AWS::Serverless::HttpApi":
            body = template.select(resource.get("Properties", {}).get("DefinitionBody") or {})
            return dict(body.get("paths") or {})
    return {}


@dataclass(frozen=True)
class Cors:
    """The API's CORS configuration (``x-amazon-apigateway-cors``), answered as API Gateway answers it: a preflight
    (OPTIONS with Access-Control-Request-Method) by the gateway itself, and the allow headers on every answer to an
    allowed Origin. The template's default allows any origin, so a page opened from a file or another port works."""

    origins: tuple[str, ...] = ("*",)
    methods: tuple[str, ...] = ("GET", "HEAD", "POST", "OPTIONS")
    headers: tuple[str, ...] = ()
    expose: tuple[str, ...] = ()
    max_age: int = 0

    @classmethod
    def of(cls, template: Template) -> Cors | None:
        for resource in template.body.get("Resources", {}).values():
            if resource.get("Type") == "AWS::Serverless::HttpApi":
                body = template.select(resource.get("Properties", {}).get("DefinitionBody") or {})
                found = body.get("x-amazon-apigateway-cors")
                if not found:
                    return None
                return cls(
                    tuple(found.get("allowOrigins") or ()),
                    tuple(found.get("allowMethods") or ()),
                    tuple(found.get("allowHeaders") or ()),
                    tuple(found.get("exposeHeaders") or ()),
                    int(found.get("maxAge") or 0),
                )
        return None

    def allowed(self, origin: str | None) -> str | None:
        """The Access-Control-Allow-Origin value for ``origin``, or None (no Origin, or one not allowed)."""
        if origin is None:
            return None
        return "*" if "*" in self.origins else origin if origin in self.origins else None

    def preflight(self, request: Request) -> Reply | None:
        allowed = self.allowed(request.header("origin"))
        if request.method != "OPTIONS" or request.header("access-control-request-method") is None:
            return None
        if allowed is None:
            return Reply(204)
        return Reply(
            204,
            {
                "Access-Control-Allow-Origin": allowed,
                "Access-Control-Allow-Methods": ",".join(self.methods),
                "Access-Control-Allow-Headers": ",".join(self.headers),
                "Access-Control-Max-Age": str(self.max_age),
            },
        )

    def answer(self, request: Request, reply: Reply) -> Reply:
        allowed = self.allowed(request.header("origin"))
        if allowed is None:
            return reply
        headers = {**reply.headers, "Access-Control-Allow-Origin": allowed}
        if self.expose:
            headers["Access-Control-Expose-Headers"] = ",".join(self.expose)
        return Reply(reply.status, headers, reply.body, reply.cookies)


def security_schemes(template: Template) -> dict[str, Any]:
    """The HTTP API's security schemes as deployed (conditions decided, parameters resolved)."""
    for resource in template.body.get("Resources", {}).values():
        if resource.get("Type") == "AWS::Serverless::HttpApi":
            body = template.select(resource.get("Properties", {}).get("DefinitionBody") or {})
            return dict(template.resolve((body.get("components") or {}).get("securitySchemes") or {}))
    return {}


def _requirements(security: Any) -> tuple[dict[str, list[str]], ...] | None:
    if security is None:
        return None
    return tuple({str(name): list(scopes or []) for name, scopes in requirement.items()} for requirement in security)


class Decision(Protocol):
    """What an authorizer decided: ``refusal`` is the reply when refused; ``context`` goes to the event."""

    @property
    def refusal(self) -> Reply | None: ...

    @property
    def context(self) -> dict[str, Any] | None: ...


class Authorizer(Protocol):
    def authorize(self, route: Route, request: Request) -> Decision: ...


@dataclass(frozen=True)
class Allowed:
    context: dict[str, Any] | None = None  # requestContext.authorizer
    refusal: Reply | None = None


class OpenAccess:
    """No authentication (``serve --auth none``): every route is public."""

    def authorize(self, route: Route, request: Request) -> Decision:
        return Allowed()


LocalResponder = Callable[[Request], Reply]


class Gateway:
    """Template routes to their handlers, plus local routes; ``handlers`` overrides a dotted path's function."""

    def __init__(
        self,
        routes: list[Route],
        authorizer: Authorizer | None = None,
        handlers: Mapping[str, Handler] | None = None,
    ) -> None:
        self.routes = routes
        self.authorizer: Authorizer = authorizer or OpenAccess()
        self._handlers = dict(handlers or {})
        self._local: dict[tuple[str, str], LocalResponder] = {}
        self._imported = threading.Lock()
        self.cors: Cors | None = None

    @classmethod
    def from_template(cls, template: Template, authorizer: Authorizer | None = None) -> Gateway:
        gateway = cls(template_routes(template), authorizer)
        gateway.cors = Cors.of(template)
        return gateway

    def add_local_route(self, method: str, path: str, respond: LocalResponder) -> None:
        """Serve ``method path`` (exact) with ``respond``: for what the deployed API does not serve (a page, a
        document). A deployed route keeps its path: local routes may not shadow one."""
        taken = [route.key for route in self.routes if route.parameters(method.upper(), path) is not None]
        if taken and taken != [DEFAULT_ROUTE]:
            raise ValueError(f"{method.upper()} {path} is a deployed route ({taken[0]})")
        self._local[(method.upper(), path)] = respond

    def route(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        """The route API Gateway would choose for this method and decoded path, and its path parameters."""
        found = [(r, p) for r in self.routes if (p := r.parameters(method, path)) is not None]
        return max(found, key=lambda pair: pair[0].specificity()) if found else None

    def handle(self, request: Request) -> Reply:
        if self.cors is None:
            return self._handle(request)
        return self.cors.preflight(request) or self.cors.answer(request, self._handle(request))

    def _handle(self, request: Request) -> Reply:
        local = self._local.get((request.method, urlsplit(request.target).path))
        if local is not None:
            return local(request)
        chosen = self.route(request.method, request.path)
        if chosen is None:
            return NOT_FOUND
        route, parameters = chosen
        decision = self.authorizer.authorize(route, request)
        if decision.refusal is not None:
            return decision.refusal
        event = http_api_event(request, route.key, parameters, decision.context)
        try:
            handler = self.handler(route.handler)
            with _ONE_EVENT_AT_A_TIME:
                answer = invoke(handler, event, LocalContext(function_name=route.function))
            return reply_of(answer)
        except Exception:  # the function failed: API Gateway answers 500 and the log tells why
            log.exception("function failed", extra={"route": route.key, "function": route.function})
            return INTERNAL_ERROR

    def handler(self, dotted: str) -> Handler:
        """The function behind a template ``Handler`` value, imported once."""
        with self._imported:
            if dotted not in self._handlers:
                module, _, name = dotted.rpartition(".")
                self._handlers[dotted] = getattr(importlib.import_module(module), name)
            return self._handlers[dotted]


def http_api_event(
    request: Request,
    route_key: str,
    parameters: Mapping[str, str] | None = None,
    authorizer: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The API Gateway HTTP API (payload format 2.0) event for one request."""
    parts = urlsplit(request.target)
    now = datetime.now(UTC)
    host = request.header("host") or "localhost"
    domain = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    headers: dict[str, str] = {}
    for name, value in request.headers:
        key = name.lower()
        if key != "cookie":
            headers[key] = f"{headers[key]},{value}" if key in headers else value
    headers.setdefault("x-forwarded-for", request.source_ip)
    headers.setdefault("x-forwarded-proto", "http")
    context: dict[str, Any] = {
        "accountId": ACCOUNT_ID,
        "apiId": "local",
        "domainName": domain,
        "domainPrefix": domain.split(".", maxsplit=1)[0],
        "http": {
            "method": request.method,
            "path": request.path,
            "protocol": "HTTP/1.1",
            "sourceIp": request.source_ip,
            "userAgent": request.header("user-agent") or "",
        },
        "requestId": str(uuid.uuid4()),
        "routeKey": route_key,
        "stage": "$default",
        "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
        "timeEpoch": int(now.timestamp() * 1000),
    }
    if authorizer is not None:
        context["authorizer"] = dict(authorizer)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": request.path,
        "rawQueryString": parts.query,
        "headers": headers,
        "requestContext": context,
        "isBase64Encoded": False,
    }
    cookies = [c.strip() for value in _values(request, "cookie") for c in value.split(";") if c.strip()]
    if cookies:
        event["cookies"] = cookies
    if parts.query:
        query: dict[str, str] = {}
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            query[name] = f"{query[name]},{value}" if name in query else value
        event["queryStringParameters"] = query
    if parameters:
        event["pathParameters"] = dict(parameters)
    if request.body:
        event["body"], event["isBase64Encoded"] = _body(request.body, request.header("content-type"))
    return event


def _values(request: Request, name: str) -> list[str]:
    return [value for key, value in request.headers if key.lower() == name]


def _body(raw: bytes, content_type: str | None) -> tuple[str, bool]:
    """Text for the text content types API Gateway recognises (when it is UTF-8); base64 for anything else."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind.startswith("text/") or kind in TEXT_TYPES:
        try:
            return raw.decode("utf-8"), False
        except UnicodeDecodeError:
            pass
    return base64.b64encode(raw).decode("ascii"), True


def reply_of(answer: Any) -> Reply:
    """The HTTP reply for a function's payload 2.0 answer."""
    if not isinstance(answer, dict) or "statusCode" not in answer:
        # The 2.0 format's inference: any JSON answer without a statusCode is a 200 JSON body.
        return Reply.json(200, answer)
    body = answer.get("body") or ""
    raw = base64.b64decode(body) if answer.get("isBase64Encoded") else str(body).encode("utf-8")
    headers = {str(k): str(v) for k, v in (answer.get("headers") or {}).items()}
    return Reply(int(answer["statusCode"]), headers, raw, tuple(str(c) for c in answer.get("cookies") or ()))
