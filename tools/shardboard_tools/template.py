"""Read template.yaml (the one schema) and create its tables on any DynamoDB endpoint.

cfn-flip's loader understands CloudFormation's short tags (!Ref, !Sub, !GetAtt, !If ...); the few intrinsics the
tables use are resolved here against parameter values, so local tables are exactly the deployed ones.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from uuid import NAMESPACE_URL, uuid5

from botocore.exceptions import ClientError
from cfn_flip import load_yaml

from shardboard.adapters.dynamodb import error_code
from shardboard.settings import DEFAULT_STACK, Settings

# Properties of AWS::DynamoDB::Table that CreateTable takes as they are.
_CREATE_TABLE_KEYS = (
    "TableName",
    "AttributeDefinitions",
    "KeySchema",
    "GlobalSecondaryIndexes",
    "LocalSecondaryIndexes",
    "BillingMode",
    "ProvisionedThroughput",
    "StreamSpecification",
)


# A symlink to the repository's template.yaml: one source of truth, and the wheel holds a copy of its content.
PACKAGED_TEMPLATE = Path(__file__).resolve().parent / "template.yaml"


# Parameters of earlier versions that no value replaces, and why (docs/deploy.md "Upgrading: parameters").
RETIRED = {
    "MetricsNamespace": "the functions' metrics go to Shardboard/<stack name>, one namespace per stack",
}


class TemplateError(ValueError):
    """template.yaml could not be read or uses an intrinsic this resolver does not know."""


def default_template_path() -> Path:
    """SHARDBOARD_TEMPLATE, else ./template.yaml, else the one shipped in the package (works outside the repository)."""
    if os.environ.get("SHARDBOARD_TEMPLATE"):
        return Path(os.environ["SHARDBOARD_TEMPLATE"])
    here = Path.cwd() / "template.yaml"
    return here if here.exists() else PACKAGED_TEMPLATE


@dataclass(frozen=True)
class Template:
    body: dict[str, Any]
    parameters: dict[str, str]
    stack: str = DEFAULT_STACK

    def __post_init__(self) -> None:
        # Parameters built by hand (tests, `serve --auth`) may still use the names of earlier versions.
        object.__setattr__(self, "parameters", _renamed(self.parameters, self.body.get("Parameters", {})))

    @classmethod
    def load(
        cls, path: Path | None = None, overrides: Mapping[str, str] | None = None, stack: str = DEFAULT_STACK
    ) -> Template:
        path = path or default_template_path()
        try:
            body = load_yaml(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise TemplateError(f"cannot read {path}: {error}") from error
        declared = body.get("Parameters", {})
        given = {name: str(value) for name, value in (overrides or {}).items()}
        for name in set(given) & set(RETIRED) - set(declared):
            raise TemplateError(f"parameter {name} is no more: {RETIRED[name]}")
        given = _renamed(given, declared)
        unknown = set(given) - set(declared) - set(_fixed_names(body))
        if unknown:
            raise TemplateError(f"unknown template parameter(s): {', '.join(sorted(unknown))}")
        parameters = {name: str(spec.get("Default", "")) for name, spec in declared.items()}
        for name, value in given.items():
            if name in declared:
                parameters[name] = _checked(name, value, declared[name])
        # The values the template fixes (its Mappings, per the chosen parameters); a -p of one sets it for a local run.
        for name, value in _fixed_values(body, parameters).items():
            parameters[name] = _checked_fixed(name, given[name], value) if name in given else value
        return cls(body, parameters, stack)

    # -- intrinsic functions
    def resolve(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self.resolve(n) for n in node]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((key, value),) = node.items()
            intrinsics: dict[str, Callable[[Any], Any]] = {
                "Ref": self._ref,
                "Fn::Sub": self._sub,
                "Fn::If": self._if,
                "Fn::Equals": self._equals,
                "Fn::And": lambda conditions: all(self._truth(c) for c in conditions),
                "Fn::Or": lambda conditions: any(self._truth(c) for c in conditions),
                "Fn::Not": lambda conditions: not self._truth(conditions[0]),
                "Condition": self.condition,
                "Fn::Join": lambda value: str(value[0]).join(str(part) for part in self.resolve(value[1])),
                "Fn::FindInMap": self._find_in_map,
                "Fn::Select": lambda value: self.resolve(value[1])[int(self.resolve(value[0]))],
                "Fn::Split": lambda value: str(self.resolve(value[1])).split(str(value[0])),
            }
            if key in intrinsics:
                return intrinsics[key](value)
            if key.startswith("Fn::"):
                raise TemplateError(f"{key} is not supported in table properties")
        resolved = {k: self.resolve(v) for k, v in node.items()}
        return {k: v for k, v in resolved.items() if v is not _NO_VALUE}

    def _find_in_map(self, value: list[Any]) -> str:
        """A fixed value: a local -p of its name if one was given (it is in ``parameters``), else the Mappings'."""
        mapping, top, name = (str(self.resolve(part)) for part in value)
        if name in self.parameters and name not in self.body.get("Parameters", {}):
            return self.parameters[name]
        try:
            return str(self.body["Mappings"][mapping][top][name])
        except KeyError:
            raise TemplateError(f"!FindInMap [{mapping}, {top}, {name}]: no such value") from None

    def _if(self, value: list[Any]) -> Any:
        condition, when_true, when_false = value
        return self.resolve(when_true if self.condition(condition) else when_false)

    def _truth(self, node: Any) -> bool:
        """A condition operand: ``{"Condition": name}`` or an intrinsic that yields a boolean."""
        return bool(self.resolve(node))

    def select(self, node: Any) -> Any:
        """``node`` as CloudFormation deploys it with these parameters: every ``Fn::If`` decided, ``AWS::NoValue``
        dropped and parameter references replaced; other intrinsics (``!GetAtt``, ``!Sub`` of resources) are kept."""
        if isinstance(node, list):
            return [n for n in (self.select(n) for n in node) if n is not _NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((key, value),) = node.items()
            if key == "Fn::If":
                condition, when_true, when_false = value
                return self.select(when_true if self.condition(condition) else when_false)
            if key == "Ref" and (value == "AWS::NoValue" or value in self.parameters):
                return self._ref(value)
            if key in {"Fn::FindInMap", "Fn::Select", "Fn::Split"}:  # only ever of parameters and mappings here
                return self.resolve(node)
        return {k: v for k, v in ((k, self.select(v)) for k, v in node.items()) if v is not _NO_VALUE}

    def _equals(self, value: list[Any]) -> bool:
        left, right = self.resolve(value)
        return str(left) == str(right)

    def condition(self, name: str) -> bool:
        return bool(self.resolve(self.body.get("Conditions", {})[name]))

    def _ref(self, name: str) -> Any:
        region = os.environ.get("AWS_REGION", "us-east-1")
        stack_id = f"arn:aws:cloudformation:{region}:000000000000:stack/{self.stack}/{uuid5(NAMESPACE_URL, self.stack)}"
        pseudo = {
            "AWS::StackName": self.stack,
            "AWS::StackId": stack_id,
            "AWS::Region": region,
            "AWS::AccountId": "000000000000",
            "AWS::NoValue": _NO_VALUE,
            "AWS::URLSuffix": "amazonaws.com",
        }
        if name in pseudo:
            return pseudo[name]
        if name in self.parameters:
            if self.body.get("Parameters", {}).get(name, {}).get("Type") == "CommaDelimitedList":
                return [item.strip() for item in self.parameters[name].split(",")] if self.parameters[name] else []
            return self.parameters[name]
        if name in self.body.get("Resources", {}):
            return self.table_name(name)
        raise TemplateError(f"!Ref {name}: not a parameter or resource")

    def _sub(self, value: Any) -> str:
        text, variables = (value, {}) if isinstance(value, str) else (value[0], self.resolve(value[1]))

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            return str(variables[name]) if name in variables else str(self._ref(name))

        return re.sub(r"\$\{([^}!]+)\}", replace, text)

    # -- tables
    def table_resources(self) -> dict[str, dict[str, Any]]:
        return {
            name: r for name, r in self.body.get("Resources", {}).items() if r.get("Type") == "AWS::DynamoDB::Table"
        }

    def table_name(self, logical_id: str) -> str:
        properties = self.table_resources()[logical_id].get("Properties", {})
        return str(self.resolve(properties["TableName"])) if "TableName" in properties else f"{self.stack}-{logical_id}"

    def create_table_requests(self) -> dict[str, dict[str, Any]]:
        """CreateTable arguments for every table, keyed by logical id."""
        requests = {}
        for logical_id, resource in self.table_resources().items():
            properties = self.resolve(resource.get("Properties", {}))
            request = {k: properties[k] for k in _CREATE_TABLE_KEYS if k in properties}
            request["TableName"] = self.table_name(logical_id)
            if "StreamSpecification" in request:  # CloudFormation implies it; CreateTable wants it said
                request["StreamSpecification"] = {**request["StreamSpecification"], "StreamEnabled": True}
            requests[logical_id] = _numbers_as_ints(request)
        return requests

    def function_environment(self, function: str = "AggregatorFunction") -> dict[str, str]:
        """The environment Lambda gives ``function``: the Globals' variables plus its own, resolved."""

        merged = {
            **_variables(self.body.get("Globals", {}).get("Function")),
            **_variables(self.body.get("Resources", {}).get(function, {}).get("Properties")),
        }
        return {name: str(self.resolve(value)) for name, value in merged.items()}

    def variables_of(self, parameters: Collection[str], function: str = "AggregatorFunction") -> set[str]:
        """The environment variables of ``function`` whose value depends on any of ``parameters`` (directly, through
        ``!Sub`` or through a condition): the settings a ``-p`` given on the command line decides."""
        wanted = set(parameters)
        environment = {
            **_variables(self.body.get("Globals", {}).get("Function")),
            **_variables(self.body.get("Resources", {}).get(function, {}).get("Properties")),
        }
        return {name for name, value in environment.items() if self._references(value) & wanted}

    def _references(self, node: Any, seen: frozenset[str] = frozenset()) -> set[str]:
        """Every name ``node`` refers to: ``!Ref``s, ``${}`` of ``!Sub`` and, through conditions, theirs."""
        if isinstance(node, list):
            return set().union(*(self._references(n, seen) for n in node)) if node else set()
        if isinstance(node, str) or not isinstance(node, dict):
            return set()
        found: set[str] = set()
        for key, value in node.items():
            if key == "Ref":
                found.add(str(value))
            elif key == "Fn::Sub":
                text, local = (value, {}) if isinstance(value, str) else (value[0], value[1])
                found |= set(re.findall(r"\$\{([^}!.]+)\}", text)) - set(local)
                found |= self._references(local, seen)
            elif key == "Condition" and isinstance(value, str) and value not in seen:
                found |= self._references(self.body.get("Conditions", {}).get(value), seen | {value})
            elif key == "Fn::If":
                found |= self._references({"Condition": value[0]}, seen) | self._references(value[1:], seen)
            elif key == "Fn::FindInMap":  # a fixed value is decided by its own name, and by the key that picks it
                found |= {str(value[2])} | self._references(value[1], seen)
            else:
                found |= self._references(value, seen)
        return found

    def settings(self, function: str = "AggregatorFunction", **changes: Any) -> Settings:
        """Settings as the deployed function sees them: read from the environment the template gives it."""
        return replace(Settings.from_env(self.function_environment(function)), **changes)


def _variables(node: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``Environment.Variables`` of a function's properties (or of the Globals' ``Function``)."""
    return dict((node or {}).get("Environment", {}).get("Variables", {}))


def _renamed(given: Mapping[str, str], declared: Mapping[str, Any]) -> dict[str, str]:
    """Parameters of earlier versions that one parameter now holds, given as that parameter: scripts, tests and
    docs that pass the old names keep working on the local runtime (CloudFormation knows only the new ones)."""
    renamed = dict(given)
    # AlarmTopicArn and AlarmEmail -> AlarmTarget: the topic, else the address (a topic always won over an address).
    topic, email = renamed.pop("AlarmTopicArn", ""), renamed.pop("AlarmEmail", "")
    if "AlarmTarget" in declared and (topic or email) and not renamed.get("AlarmTarget"):
        renamed["AlarmTarget"] = topic or email
    # JwtIssuer, JwtAudience, JwtWriteScope and JwtAdminScope -> Jwt: "<issuer> <audiences> <write> <admin>".
    parts = {name: renamed.pop(name) for name in _JWT_PARTS if name in renamed}
    if "Jwt" in declared and (parts.get("JwtIssuer") or parts.get("JwtAudience")) and not renamed.get("Jwt"):
        renamed["Jwt"] = " ".join(parts.get(name, default) for name, default in _JWT_PARTS.items())
    return renamed


# The parameters Jwt holds, in its order, with what each defaulted to.
_JWT_PARTS = {"JwtIssuer": "", "JwtAudience": "", "JwtWriteScope": "views:write", "JwtAdminScope": "items:admin"}


def _fixed_names(body: Mapping[str, Any]) -> set[str]:
    """Every name of a value the template fixes in its Mappings (any top-level key)."""
    return {name for table in body.get("Mappings", {}).values() for row in table.values() for name in row}


def _fixed_values(body: Mapping[str, Any], parameters: Mapping[str, str]) -> dict[str, str]:
    """The values the template's Mappings fix: a mapping named after a parameter in the plural (``Stages`` for
    ``Stage``) gives the row of that parameter's value; any other (``Tuning``) gives every row, its groups being for
    the reader only."""
    values: dict[str, str] = {}
    for mapping, table in body.get("Mappings", {}).items():
        key = mapping.removesuffix("s")
        rows = [table[parameters[key]]] if key in parameters else list(table.values())
        for row in rows:
            for name, value in row.items():
                if name in values:
                    raise TemplateError(f"Mappings name {name} twice: a -p of it would be ambiguous")
                values[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return values


def _checked_fixed(name: str, value: str, fixed: str) -> str:
    """A local -p of a fixed value: of the same kind as the template's (true/false, a whole number, or any text);
    what the settings then refuse (a malformed schedule, a zero N) they refuse with their own message."""
    if fixed in {"true", "false"} and value not in {"true", "false"}:
        raise TemplateError(f"parameter {name} must be one of true, false, got {value!r}")
    if fixed.isdigit() and not value.isdigit():
        raise TemplateError(f"parameter {name} must be a whole number, got {value!r}")
    return value


def _checked(name: str, value: str, spec: Mapping[str, Any]) -> str:
    """Refuse a parameter value the way CloudFormation would (type, range, allowed values, pattern)."""
    if spec.get("Type") == "Number":
        try:
            number = float(value)
        except ValueError:
            raise TemplateError(f"parameter {name} must be a number, got {value!r}") from None
        low, high = spec.get("MinValue"), spec.get("MaxValue")
        if (low is not None and number < float(low)) or (high is not None and number > float(high)):
            raise TemplateError(f"parameter {name} must be from {low} to {high}, got {value}")
    allowed = spec.get("AllowedValues")
    if allowed and value not in [str(a) for a in allowed]:
        raise TemplateError(f"parameter {name} must be one of {', '.join(map(str, allowed))}, got {value!r}")
    pattern = spec.get("AllowedPattern")
    if pattern and not re.fullmatch(pattern, value):
        constraint = spec.get("ConstraintDescription") or f"must match {pattern}"
        raise TemplateError(f"parameter {name} {constraint}, got {value!r}")
    return value


def create_tables(client: Any, template: Template, wait_seconds: float = 60) -> list[str]:
    """Create every table of the template that does not exist yet; returns the names created."""
    created = []
    for request in template.create_table_requests().values():
        try:
            client.create_table(**request)
            created.append(request["TableName"])
        except ClientError as error:
            if error_code(error) != "ResourceInUseException":
                raise
    deadline = time.monotonic() + wait_seconds
    for name in created:
        while client.describe_table(TableName=name)["Table"]["TableStatus"] != "ACTIVE":
            if time.monotonic() > deadline:
                raise TimeoutError(f"table {name} did not become ACTIVE in {wait_seconds}s")
            time.sleep(0.2)
    return created


class _NoValue:
    pass


_NO_VALUE = _NoValue()


def _numbers_as_ints(node: Any) -> Any:
    """Template parameters arrive as strings; CreateTable wants integers for capacity units."""
    if isinstance(node, dict):
        return {
            k: int(v) if k.endswith("CapacityUnits") and isinstance(v, str | int) else _numbers_as_ints(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_numbers_as_ints(n) for n in node]
    return node
