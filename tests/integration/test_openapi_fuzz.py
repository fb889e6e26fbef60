"""Every route of docs/openapi.json fuzzed with schemathesis against the real handlers on moto (tables from
template.yaml), in-process through the local gateway (which `shardboard serve` answers with): no input gets a 5xx
or an answer outside the document, and no refused request writes anything."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import checks

from shardboard.handlers.openapi import document
from shardboard.handlers.routes import QUERY_PARAMETERS
from shardboard_tools.local.gateway import Gateway
from shardboard_tools.local.wsgi_api import WsgiGateway
from shardboard_tools.template import Template
from tests.conftest import ROOT, build_pipeline, examples

SCHEMA = schemathesis.openapi.from_dict(document())
APP = WsgiGateway(Gateway.from_template(Template.load(ROOT / "template.yaml")))
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
]
# Ids that go through every layer unparsed: a "/" (a greedy path), "#" (the key separator), spaces, Unicode.
ODD_IDS = ["images/001.jpg", "a#1", "a b", "ünï/çødé", "猫 #2/x", "emoji 😀", "%41", "a/../b"]


def table_items(pipeline):
    """Every item of the three tables, read from moto's in-memory backend: three boto3 scans per generated case took
    four fifths of the fuzzing's time."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][pipeline.runtime.dynamodb.meta.region_name]
    names = pipeline.settings
    return {
        table: sorted(json.dumps(item.to_json(), sort_keys=True) for item in backend.get_table(table).all_items())
        for table in (names.views_table, names.board_table, names.items_table)
    }


def call(method, path, body=None):
    """One request through the WSGI adapter: (status, headers, body bytes)."""
    from werkzeug.test import Client

    response = Client(APP).open(path, method=method, data=body, content_type="application/json")
    return response.status_code, response.headers, response.get_data()


def counted_odd_ids(pipeline):
    """``pipeline`` with views of odd ids counted and snapshotted."""
    for item in ODD_IDS:
        status, _, _ = call("POST", "/views", json.dumps({"id": item, "count": 2, "boards": ["cats"]}).encode())
        assert status == 202
    pipeline.aggregate(pipeline.stream_records())
    pipeline.snapshot()
    return pipeline


@pytest.fixture
def api(make_pipeline):
    """Tables from template.yaml on moto, with views of odd ids counted and snapshotted."""
    return counted_odd_ids(make_pipeline(TopN="10", Periods="day"))


def fuzzed(operation_id: str) -> Callable[..., None]:
    """The schemathesis test of one operation (its examples, coverage and fuzzing phases).

    One test function per route, not one ``SCHEMA.parametrize()`` for all: under pytest 9 schemathesis gives its
    per-operation items one node id, and pytest-xdist (``make test``) ran one of the eleven.
    """

    @SCHEMA.include(operation_id=operation_id).parametrize()
    @settings(
        max_examples=examples(20),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much],
    )
    def test(api: Any, case: Any) -> None:
        # Given tables holding views and snapshots
        before = table_items(api)
        # When a generated request (valid or not) arrives
        response = case.call(app=APP)
        # Then the answer is documented (status, headers, body) and never a 5xx
        case.validate_response(response, checks=CHECKS)
        # And a refused request wrote nothing
        if 400 <= response.status_code < 500:
            assert table_items(api) == before

    return test


def fuzz_test_name(operation_id: str) -> str:
    """``getItemByQuery`` -> ``test_get_item_by_query_answers_as_documented``."""
    return f"test_{re.sub(r'(?<!^)(?=[A-Z])', '_', operation_id).lower()}_answers_as_documented"


OPERATION_IDS = [
    operation["operationId"] for path in SCHEMA.raw_schema["paths"].values() for operation in path.values()
]
for _operation_id in OPERATION_IDS:
    globals()[fuzz_test_name(_operation_id)] = fuzzed(_operation_id)


def test_every_route_is_fuzzed_under_a_node_id_of_its_own():
    """pytest-xdist schedules by node id: two fuzz items sharing one would run once (one route of eleven did). Every
    route of the routes table (routes.QUERY_PARAMETERS) is in the document, so each has its fuzz test."""
    # When the module is collected as `make test` collects it
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", __file__, "--collect-only", "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout.splitlines()
    # Then each operation of the document has its fuzz test, and no two items share a node id
    node_ids = [line for line in collected if "_answers_as_documented" in line]
    assert len(node_ids) == len(set(node_ids)) == len(OPERATION_IDS) == len(QUERY_PARAMETERS)
    assert {node_id.split("::")[1].split("[")[0] for node_id in node_ids} == set(map(fuzz_test_name, OPERATION_IDS))


@pytest.mark.parametrize("item", [*ODD_IDS, "a?b", "a,b", "a+b&c=d"])
def test_odd_ids_are_put_and_read_back_through_the_document_query(api, item):
    # Given an odd id put through the gateway in the document's query form (percent-encoded)
    query = f"/item?id={quote(item, safe='')}"
    status, _, body = call("PUT", query, json.dumps({"title": "t"}).encode())
    assert status == 200, body
    # When it is read back in the same form
    status, _, body = call("GET", query)
    # Then it is that item with its metadata (and the fixture's views where it has some)
    assert status == 200, body
    answer = json.loads(body)
    assert (answer["id"], answer["meta"], answer["views"]) == (item, {"title": "t"}, 2 if item in ODD_IDS else 0)


class TestReadsOfOneBoard:
    """Requests that write nothing (each asserts it, or only reads) share one board per class run."""

    @pytest.fixture(scope="class")
    def board(self):
        from moto import mock_aws

        from shardboard.handlers import wiring

        with mock_aws():
            yield counted_odd_ids(build_pipeline(TopN="10", Periods="day"))
        wiring.use(None)

    @pytest.fixture
    def api(self, board):
        board.runtime.export_to_handlers()  # the functions answer from this board, whatever ran before
        return board

    @pytest.mark.parametrize("item", ["?", '?ã=\x88"cR', "?a/b"])
    def test_an_id_starting_with_a_question_mark_gets_api_gateways_404_as_documented(self, api, item):
        """Found by the fuzzer once every route ran: the path is cut at its first decoded '?', which leaves no id, and
        API Gateway answers its own 404 ({"message"} only), which the document did not allow."""
        case = SCHEMA["/items/{id}"]["GET"].Case(path_parameters={"id": quote(item, safe="")})
        response = case.call(app=APP)
        assert (response.status_code, response.json()) == (404, {"message": "Not Found"})
        case.validate_response(response, checks=CHECKS)

    @pytest.mark.parametrize("item", ODD_IDS)
    def test_odd_ids_are_read_back_through_the_document_path(self, api, item):
        # Given an odd id counted twice (the fixture)
        # When it is read back, percent-encoded as the document's /items/{id} says, or with its "/" sent as is
        for path in (f"/items/{quote(item, safe='')}", f"/items/{quote(item, safe='/')}"):
            status, _, body = call("GET", path)
            # Then it is the same item with its views
            assert status == 200, (path, body)
            assert json.loads(body) == {"id": item, "views": 2}

    @pytest.mark.parametrize("body", [b"\x80", b'{"id": "caf\xe9"}', b'{"id": "a", "viewer": "\xff"}'])
    def test_a_body_that_is_not_utf8_is_refused_and_writes_nothing(self, api, body):
        """Found by the fuzzer: API Gateway base64-encodes such a body, and Powertools' JSON parsing raised a 500."""
        before = table_items(api)
        status, _, answer = call("POST", "/views", body)
        assert status == 400
        assert json.loads(answer)["code"] == "bad_request"
        assert table_items(api) == before
