"""shardboard.schema's request model is the domain's rules: for any JSON body, POST /views' model accepts exactly
what ``validation.view_request`` accepts, with the same result, and refuses the rest with the same one-line reason."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from shardboard.domain import validation
from shardboard.handlers import http_input
from shardboard.handlers.http_errors import first_reason
from shardboard.schema import ViewRequest
from tests.bad_input_catalogue import HTTP, HttpCase
from tests.conftest import examples

FIELDS = st.sampled_from(["id", "count", "boards", "viewer", "views"])
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 1003),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(["a", "images/001.jpg", "a#1 ü", "cats", "global", "user-42", "\x00", "\ud800"]),
    st.lists(st.sampled_from(["cats", "global", "BAD", "dogs", "a" * 65]), max_size=10),
)
BODIES = st.one_of(st.dictionaries(FIELDS, VALUES, max_size=5), VALUES)


def outcomes(body):
    """(domain, model): each a ViewRequest tuple or the refusal's message."""
    try:
        domain = validation.view_request(body)
    except validation.BadInput as refused:
        domain = str(refused)
    try:
        model = ViewRequest.model_validate(body).as_domain()
    except ValidationError as refused:
        model = first_reason(refused.errors(), json.dumps(body))
    return domain, model


def decided_by_the_body(case: HttpCase) -> bool:
    """A POST /views row the body's rules refuse: JSON the parser takes (the JSON limits and a repeated key refuse
    the rest before any model), sent without headers or a query string to a stack of default parameters (the Boards
    policy and Idempotency-Key rows)."""
    if not (case.method == "POST" and case.body and case.body.startswith("{")) or case.headers or case.parameters:
        return False
    if case.query:  # refused for its query string, before the body is read
        return False
    try:
        http_input.json_body(case.body)
    except validation.BadInput:
        return False
    return True


@pytest.mark.parametrize("case", [c for c in HTTP if decided_by_the_body(c)], ids=lambda c: c.what)
def test_the_catalogues_bodies_get_the_same_answer(case):
    domain, model = outcomes(json.loads(case.body))
    assert model == domain and case.message in model


@settings(max_examples=examples(300), deadline=None)
@given(BODIES)
def test_any_body_gets_the_same_answer(body):
    domain, model = outcomes(body)
    assert model == domain
