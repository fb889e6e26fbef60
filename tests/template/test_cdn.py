"""A CDN in front of reads (issue 38, item 3) and browsers' views (item 4), asserted on the rendered template as
CloudFormation deploys it: the distribution exists for Stage=prod only, each route has the cache behaviour it needs
(reads keyed by path + query and timed by the origin's Cache-Control, the script long under its versioned URL, writes
and admin routes uncached with the viewer's headers), the outputs name the URL to use, and the API's CORS follows
PublicViews. The template keeps at most 15 parameters: the CDN and the origins are derived, not asked."""

from __future__ import annotations

from typing import Any

import pytest

from tests.template.test_auth import deployed

# AWS's managed policies (their ids are the same in every account): CachingDisabled, AllViewerExceptHostHeader.
CACHING_DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
ALL_VIEWER_EXCEPT_HOST = "b689b0a8-53d0-40ab-baf2-68738e2966ac"
WRITE_METHODS = {"POST", "PUT", "DELETE"}


def distribution(stack: dict[str, Any]) -> dict[str, Any]:
    return dict(stack["Resources"]["Distribution"]["Properties"]["DistributionConfig"])


def behaviour(stack: dict[str, Any], path: str) -> dict[str, Any]:
    """The cache behaviour CloudFront applies to ``path`` (an exact pattern, else the default)."""
    config = distribution(stack)
    found = [one for one in config["CacheBehaviors"] if one["PathPattern"] == path]
    return dict(found[0]) if found else dict(config["DefaultCacheBehavior"])


def policy(stack: dict[str, Any], reference: Any) -> dict[str, Any]:
    assert isinstance(reference, dict) and "Ref" in reference, reference
    return dict(stack["Resources"][reference["Ref"]]["Properties"]["CachePolicyConfig"])


def test_the_cdn_is_on_by_default_for_prod_and_off_for_dev(rendered, sam_template):
    # Given the template's default Stage
    assert sam_template["Parameters"]["Stage"]["Default"] == "prod"
    # Then prod has the distribution and its output, dev has neither
    prod, dev = deployed(rendered, Stage="prod"), deployed(rendered, Stage="dev")
    assert "Distribution" in prod["Resources"] and "CdnUrl" in prod["Outputs"]
    assert "Distribution" not in dev["Resources"] and "CdnUrl" not in dev["Outputs"]
    # And ReadUrl names the URL to use either way: the distribution's, else the API's
    assert "Distribution.DomainName" in str(prod["Outputs"]["ReadUrl"]["Value"])
    assert "execute-api" in str(dev["Outputs"]["ReadUrl"]["Value"])


def test_the_template_asks_at_most_15_questions(sam_template):
    assert len(sam_template["Parameters"]) <= 15


@pytest.mark.parametrize("path", ["/leaderboard", "/items", "/items/a.jpg", "/rank", "/around"])
def test_reads_are_cached_by_path_and_query_for_as_long_as_the_origin_says(rendered, path):
    stack = deployed(rendered, Stage="prod")
    chosen = behaviour(stack, path)
    # Reads fall to the default behaviour: GET/HEAD cached, compressed
    assert chosen is behaviour(stack, "/no-such-pattern") or chosen == dict(distribution(stack)["DefaultCacheBehavior"])
    assert set(chosen["CachedMethods"]) == {"GET", "HEAD"} and not WRITE_METHODS & set(chosen["AllowedMethods"])
    assert chosen["Compress"] is True
    config = policy(stack, chosen["CachePolicyId"])
    # TTL from the origin's Cache-Control: min 0, nothing cached that the origin does not mark cacheable
    assert config["MinTTL"] == 0 and config["DefaultTTL"] == 0 and config["MaxTTL"] >= 60
    key = config["ParametersInCacheKeyAndForwardedToOrigin"]
    assert key["QueryStringsConfig"]["QueryStringBehavior"] == "all"
    assert key["CookiesConfig"]["CookieBehavior"] == "none"
    assert key["EnableAcceptEncodingGzip"] is True and key["EnableAcceptEncodingBrotli"] is True


def test_the_script_is_cached_long_under_its_versioned_url(rendered):
    stack = deployed(rendered, Stage="prod")
    chosen = behaviour(stack, "/shardboard.js")
    assert chosen["PathPattern"] == "/shardboard.js" and chosen["Compress"] is True
    config = policy(stack, chosen["CachePolicyId"])
    assert config["MinTTL"] >= 86_400 and config["MaxTTL"] >= 365 * 86_400
    # The version query (?v=) is part of the key: a release is a new URL
    assert config["ParametersInCacheKeyAndForwardedToOrigin"]["QueryStringsConfig"]["QueryStringBehavior"] == "all"


@pytest.mark.parametrize("path", ["/views", "/item", "/item/*"])
def test_writes_and_admin_routes_pass_through_uncached_with_the_viewers_headers(rendered, path):
    chosen = behaviour(deployed(rendered, Stage="prod"), path)
    assert chosen["PathPattern"] == path
    assert set(chosen["AllowedMethods"]) >= WRITE_METHODS
    assert chosen["CachePolicyId"] == CACHING_DISABLED
    assert chosen["OriginRequestPolicyId"] == ALL_VIEWER_EXCEPT_HOST
    assert chosen["ViewerProtocolPolicy"] == "https-only"


def test_the_origin_is_the_stacks_http_api_over_https(rendered):
    (origin,) = distribution(deployed(rendered, Stage="prod"))["Origins"]
    assert "HttpApi" in str(origin["DomainName"]) and "execute-api" in str(origin["DomainName"])
    assert origin["CustomOriginConfig"]["OriginProtocolPolicy"] == "https-only"


@pytest.mark.parametrize(
    ("public", "origins", "published"),
    [
        ("false", ["*"], "*"),
        ("true", ["*"], "*"),
        ("https://example.com https://www.example.com", ["https://example.com", "https://www.example.com"], None),
    ],
)
def test_cors_and_the_published_origins_follow_public_views(rendered, public, origins, published):
    stack = deployed(rendered, PublicViews=public)
    cors = stack["Resources"]["HttpApi"]["Properties"]["Body"]["x-amazon-apigateway-cors"]
    assert cors["allowOrigins"] == origins
    # A beacon's text/plain needs no preflight; the headers a page sends and reads are allowed and exposed
    assert {"content-type", "if-none-match", "idempotency-key"} <= set(cors["allowHeaders"])
    assert {"etag", "retry-after"} <= set(cors["exposeHeaders"])
    settings = stack["Resources"]["StackConfig"]["Properties"]["Settings"]
    assert settings["ALLOWED_ORIGINS"] == (published or public)


def test_the_record_function_trusts_the_visitors_address_only_from_its_own_distribution(rendered):
    # Given the prod stack (the CDN) and the dev stack (none)
    prod, dev = deployed(rendered, Stage="prod"), deployed(rendered, Stage="dev")
    # Then the distribution sends its token to the origin, and the record function holds the same value
    headers = distribution(prod)["Origins"][0]["OriginCustomHeaders"]
    token = {h["HeaderName"]: h["HeaderValue"] for h in headers}["X-Shardboard-Edge"]
    variables = prod["Resources"]["RecordViewsFunction"]["Properties"]["Environment"]["Variables"]
    assert variables["EDGE_TOKEN"] == token and len(token) == 36
    dev_variables = dev["Resources"]["RecordViewsFunction"]["Properties"]["Environment"]["Variables"]
    assert dev_variables["EDGE_TOKEN"] == ""
    # And the writes' behaviour forwards the viewer's address (the managed policy sends CloudFront's headers)
    assert behaviour(prod, "/views")["OriginRequestPolicyId"] == ALL_VIEWER_EXCEPT_HOST
    # And no other function (the readers, the admin) is given the token
    others = [
        name
        for name, resource in dev["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function" and name != "RecordViewsFunction"
    ]
    assert others and all("EDGE_TOKEN" not in str(dev["Resources"][name]) for name in others)
