"""The local API gateway on moto, over real HTTP: every template route through the real handlers, API Gateway's
route matching (greedy ids with "/", "#", spaces and Unicode; unknown routes and wrong methods 404), the payload
2.0 event, and the local routes hook."""

from __future__ import annotations

import copy
import json
from typing import Any
from urllib.parse import quote

import pytest
import requests

from shardboard_tools.local.gateway import Gateway, Reply, Request, template_routes
from shardboard_tools.local.webapp import LocalApiServer
from shardboard_tools.template import Template

ODD_IDS = ["images/001.jpg", "a#b", "with space", "ünï/cødé 漢字", "🎉 party", "q?x=1&y", "a+b", "/leading", "a%41"]
ECHO = "tests.integration.test_local_gateway.echo"


def echo(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """A function that answers with the event it received (or fails when asked to)."""
    if event.get("rawPath", "").endswith("/fail"):
        raise RuntimeError("asked to fail")
    if event.get("rawPath", "").endswith("/plain"):
        return {"plain": True}  # no statusCode: the 2.0 format infers a 200 JSON answer
    return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": json.dumps(event)}


@pytest.fixture
def serve(pipeline):
    """Start the local API over ``pipeline``'s tables: ``serve(gateway=None)`` -> base URL."""
    started = []

    def start(gateway: Gateway | None = None) -> str:
        server = LocalApiServer(gateway or Gateway.from_template(pipeline.runtime.template)).start()
        started.append(server)
        return server.url

    yield start
    for server in started:
        server.stop()


def with_echo_routes(template: Template) -> Template:
    """The template plus a function of its own with a greedy route: a new route needs no code change."""
    body = copy.deepcopy(template.body)
    body["Resources"]["EchoFunction"] = {
        "Type": "AWS::Serverless::Function",
        "Properties": {
            "Handler": ECHO,
            "Events": {
                "Echo": {"Type": "HttpApi", "Properties": {"Method": "ANY", "Path": "/echo/{rest+}"}},
                "Pet": {"Type": "HttpApi", "Properties": {"Method": "GET", "Path": "/echo/pets/{pet}"}},
            },
        },
    }
    return Template(body, template.parameters, template.stack)


def test_every_route_of_the_template_is_served(pipeline):
    keys = {route.key: route.function for route in template_routes(pipeline.runtime.template)}
    assert keys == {
        "POST /views": "RecordViewsFunction",
        "GET /leaderboard": "ReadApiFunction",
        "GET /items/{id+}": "ReadApiFunction",
        "GET /items": "ReadApiFunction",
        "GET /item": "ReadApiFunction",
        "GET /rank": "ReadApiFunction",
        "GET /around": "ReadApiFunction",
        "GET /boards": "ReadApiFunction",
        "GET /shardboard.js": "ReadApiFunction",
        "PUT /item": "ItemsAdminFunction",
        "POST /item/hide": "ItemsAdminFunction",
        "POST /item/unhide": "ItemsAdminFunction",
        "DELETE /item": "ItemsAdminFunction",
    }


@pytest.mark.parametrize("item", ODD_IDS)
def test_odd_ids_reach_the_greedy_route_whole(pipeline, serve, item):
    # Given the local API
    url = serve()
    # When a view of an odd id is posted, aggregated, and the item read back by its percent-encoded id (in the path,
    # or in the query for an id with '?', which no path can carry)
    posted = requests.post(url + "views", json={"id": item, "count": 2}, timeout=10)
    pipeline.aggregate(pipeline.stream_records())
    where = "item?id=" if "?" in item else "items/"
    read = requests.get(url + where + quote(item, safe=""), timeout=10)
    # Then both reach the functions with the whole id: "/" and "#" included
    assert (posted.status_code, posted.json()["id"]) == (202, item)
    assert (read.status_code, read.json()) == (200, {"id": item, "views": 2})
    assert pipeline.truth() == {item: 2}


def test_a_path_ends_at_a_decoded_question_mark_as_api_gateway_cuts_it(pipeline, serve):
    # Given the items "q" and "q?x" with views
    url = serve()
    for item in ("q", "q?x"):
        requests.post(url + "views", json={"id": item}, timeout=10)
    pipeline.aggregate(pipeline.stream_records())
    # When "q?x" is asked for in the path form, percent-encoded
    answer = requests.get(url + "items/q%3Fx", timeout=10)
    # Then the function sees the path cut at the decoded '?': the answer is about "q"
    assert (answer.status_code, answer.json()["id"]) == (200, "q")
    assert requests.get(url + "items/%3Fx", timeout=10).status_code == 404  # nothing left for the greedy route
    # And the query form names the whole id
    assert requests.get(url + "item?id=q%3Fx", timeout=10).json()["id"] == "q?x"


def test_an_id_with_an_encoded_newline_reaches_the_function_and_its_400(pipeline, serve):
    answer = requests.get(serve() + "items/a%0Ab", timeout=10)
    assert answer.status_code == 400 and answer.json()["code"] == "bad_request"


def test_an_encoded_slash_is_a_slash_to_the_greedy_route(pipeline, serve):
    url = serve()
    requests.post(url + "views", json={"id": "images/001.jpg"}, timeout=10)
    pipeline.aggregate(pipeline.stream_records())
    assert requests.get(url + "items/images%2F001.jpg", timeout=10).json() == {"id": "images/001.jpg", "views": 1}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "nope"),
        ("GET", "leaderboard/"),  # no trailing-slash twin
        ("GET", "items/"),  # a greedy variable takes at least one character
        ("POST", "items"),  # GET /items is the newest list; no other method
        ("POST", "views/x"),
        ("GET", "views"),  # wrong method: an HTTP API has no 405, only routes
        ("PUT", "views"),
        ("DELETE", "leaderboard"),
        ("POST", "leaderboard"),
        ("PATCH", "items/a"),
        ("HEAD", "leaderboard"),
        ("OPTIONS", "views"),
    ],
)
def test_unknown_routes_and_wrong_methods_are_not_found_and_write_nothing(pipeline, serve, method, path):
    # Given the local API
    url = serve()
    # When a route that is not deployed is asked for, with a body that would be a valid view
    answer = requests.request(method, url + path, json={"id": "a"}, timeout=10)
    # Then API Gateway's 404 comes back, no function runs and nothing is written
    assert answer.status_code == 404
    if method != "HEAD":
        assert answer.json() == {"message": "Not Found"}
    assert pipeline.truth() == {}


def test_a_form_encoded_post_counts_as_curl_d_sends_it(pipeline, serve):
    # Given curl -d's content type, which API Gateway base64-encodes
    url = serve()
    answer = requests.post(
        url + "views", data=b'{"id": "a"}', headers={"Content-Type": "application/x-www-form-urlencoded"}, timeout=10
    )
    # Then the view is recorded all the same
    assert answer.status_code == 202
    assert pipeline.truth() == {"a": 1}


@pytest.mark.parametrize(
    ("body", "content_type"),
    [(b'{"id": "\xff"}', "application/json"), (b"\xff\xfe", None), (b"", "application/json"), (b"[]", "text/plain")],
)
def test_bad_bodies_get_a_400_and_write_nothing(pipeline, serve, body, content_type):
    url = serve()
    headers = {"Content-Type": content_type} if content_type else {}
    answer = requests.post(url + "views", data=body, headers=headers, timeout=10)
    assert answer.status_code == 400 and answer.json()["message"]
    assert pipeline.truth() == {}


def test_the_event_is_api_gateways_payload_2_0(pipeline, serve):
    # Given a route of a new function in the template
    url = serve(Gateway.from_template(with_echo_routes(pipeline.runtime.template)))
    # When a request with an encoded path, repeated query names, cookies and a repeated header arrives
    answer = requests.post(
        url + "echo/a%2Fb/%C3%A9t%C3%A9%20x%23y?k=1&k=2&q=a%20b&e=",
        data=b'{"x": 1}',
        headers={"Content-Type": "application/json", "Cookie": "s=1; t=2", "X-Trace": "one"},
        timeout=10,
    )
    event = answer.json()
    # Then the function gets what API Gateway sends: decoded path, raw query, joined values, cookies apart
    assert answer.status_code == 200
    assert event["version"] == "2.0"
    assert event["routeKey"] == event["requestContext"]["routeKey"] == "ANY /echo/{rest+}"
    assert event["rawPath"] == event["requestContext"]["http"]["path"] == "/echo/a/b/été x#y"
    assert event["pathParameters"] == {"rest": "a/b/été x#y"}
    assert event["rawQueryString"] == "k=1&k=2&q=a%20b&e="
    assert event["queryStringParameters"] == {"k": "1,2", "q": "a b", "e": ""}
    assert event["cookies"] == ["s=1", "t=2"]
    assert "cookie" not in event["headers"] and event["headers"]["x-trace"] == "one"
    assert event["headers"]["content-type"] == "application/json"
    assert (event["body"], event["isBase64Encoded"]) == ('{"x": 1}', False)
    assert event["requestContext"]["http"]["method"] == "POST"
    assert event["requestContext"]["http"]["sourceIp"] == "127.0.0.1"
    assert event["requestContext"]["stage"] == "$default"


def test_a_binary_body_arrives_base64_encoded_and_a_full_match_beats_the_greedy_route(pipeline, serve):
    url = serve(Gateway.from_template(with_echo_routes(pipeline.runtime.template)))
    binary = requests.post(
        url + "echo/upload", data=b"\x00\x01", headers={"Content-Type": "application/octet-stream"}, timeout=10
    ).json()
    pet = requests.get(url + "echo/pets/rex", timeout=10).json()
    deeper = requests.get(url + "echo/pets/rex/toys", timeout=10).json()
    assert (binary["body"], binary["isBase64Encoded"]) == ("AAE=", True)
    assert (pet["routeKey"], pet["pathParameters"]) == ("GET /echo/pets/{pet}", {"pet": "rex"})
    assert (deeper["routeKey"], deeper["pathParameters"]) == ("ANY /echo/{rest+}", {"rest": "pets/rex/toys"})
    assert "body" not in pet and "queryStringParameters" not in pet


def test_a_function_that_fails_is_a_500_and_one_without_status_a_200_as_api_gateway_answers(pipeline, serve):
    url = serve(Gateway.from_template(with_echo_routes(pipeline.runtime.template)))
    answer = requests.get(url + "echo/fail", timeout=10)
    assert (answer.status_code, answer.json()) == (500, {"message": "Internal Server Error"})
    plain = requests.get(url + "echo/plain", timeout=10)
    assert (plain.status_code, plain.json()) == (200, {"plain": True})
    assert plain.headers["Content-Type"] == "application/json"


def test_local_routes_are_served_beside_the_deployed_ones_and_never_shadow_one(pipeline, serve):
    # Given a local route (the OpenAPI document's hook)
    gateway = Gateway.from_template(pipeline.runtime.template)
    gateway.add_local_route("GET", "/openapi.json", lambda request: Reply.json(200, {"openapi": "3.0.1"}))
    url = serve(gateway)
    # Then it is served, the page too, and a deployed route cannot be taken over
    assert requests.get(url + "openapi.json", timeout=10).json() == {"openapi": "3.0.1"}
    assert requests.get(url, timeout=10).headers["Content-Type"].startswith("text/html")
    with pytest.raises(ValueError, match="GET /items/"):
        gateway.add_local_route("GET", "/items/x", lambda request: Reply(200))


def test_the_gateway_answers_without_a_server_too(pipeline):
    gateway = Gateway.from_template(pipeline.runtime.template)
    reply = gateway.handle(Request.of("POST", "/views", {"Content-Type": "application/json"}, b'{"id": "z"}'))
    assert reply.status == 202 and json.loads(reply.body)["recorded"] == 1
