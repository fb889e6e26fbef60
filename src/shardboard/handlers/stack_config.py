"""CloudFormation custom resource (StackConfig): publish the stack's settings for its clients at every deploy.

CloudFormation calls it on create and on every update whose settings changed (a rollback calls it again with the
previous ones); it writes the settings item of the board table (adapters/stack_config.py) and answers CloudFormation
through the pre-signed URL of the event. It always answers, FAILED with the reason when it cannot publish, so a
deploy fails in seconds instead of waiting for the custom resource's timeout. A delete leaves the item: the tables
outlive the stack (DeletionPolicy: Retain).
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shardboard.adapters.stack_config import publish
from shardboard.handlers.observability import logger
from shardboard.handlers.wiring import container
from shardboard.settings import PUBLISHED_VARIABLES, ConfigError, Settings

PUBLISHED_BY = "deploy"
# CloudFormation's pre-signed URL answers in well under a second; a hung PUT must not hold the function to its timeout.
RESPONSE_TIMEOUT_SECONDS = 10


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, str]:
    status, reason = "SUCCESS", ""
    properties = event.get("ResourceProperties", {})
    table = str(properties.get("Table", ""))
    try:
        if event["RequestType"] in {"Create", "Update"}:
            stores = container()
            publish(
                stores.dynamodb, table, published(properties.get("Settings", {})), PUBLISHED_BY, when=stores.clock()
            )
            logger.info("stack settings published", extra={"table": table})
    except Exception as error:  # CloudFormation must hear back whatever went wrong, or the deploy hangs
        status, reason = "FAILED", f"{type(error).__name__}: {error}"
        logger.exception("stack settings not published", extra={"table": table})
    answer = {
        "Status": status,
        "Reason": reason or f"see CloudWatch log stream {context.log_stream_name}",
        "PhysicalResourceId": event.get("PhysicalResourceId") or f"{table}/stack#config",
        "StackId": event["StackId"],
        "RequestId": event["RequestId"],
        "LogicalResourceId": event["LogicalResourceId"],
    }
    respond(event["ResponseURL"], answer)
    return answer


def published(variables: dict[str, Any]) -> dict[str, str]:
    """The variables to publish, checked as the functions check theirs at cold start: exactly the published names,
    each one a setting the functions accept (a value they would refuse fails the deploy, not a client later)."""
    given = {name: str(value) for name, value in variables.items()}
    missing = sorted(set(PUBLISHED_VARIABLES) - set(given))
    unknown = sorted(set(given) - set(PUBLISHED_VARIABLES))
    if missing or unknown:
        raise ConfigError(f"StackConfig Settings: missing {missing}, unknown {unknown}")
    return Settings().with_published(given).published_variables()


def respond(url: str, answer: dict[str, str]) -> None:
    """PUT the answer to CloudFormation's pre-signed S3 URL (no content type: the URL was signed without one)."""
    body = json.dumps(answer).encode()
    request = urllib.request.Request(  # noqa: S310 - the URL is CloudFormation's own https pre-signed URL
        url, data=body, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(body))}
    )
    with urllib.request.urlopen(request, timeout=RESPONSE_TIMEOUT_SECONDS) as response:  # noqa: S310
        response.read()
