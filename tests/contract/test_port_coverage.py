"""Every method of every port has a contract test: a test of this folder that takes an implementation fixture (so it
runs on memory, the in-process engine, moto and DynamoDB Local), calls the method (itself or through a helper of its
module) and asserts something. A method added to a port without one fails here."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from shardboard.domain import boards, ports
from tests.contract import conftest

HERE = Path(__file__).parent
# The fixtures that hand a test one implementation after another (conftest.py; the registry's and the event sinks'
# own modules).
BACKEND_FIXTURES = {"ports", "registry", "sinks"}


def port_methods() -> dict[str, set[str]]:
    """Each port Protocol's own methods (a bundle of roles adds none)."""
    protocols = [
        value
        for module in (ports, boards)
        for value in vars(module).values()
        if inspect.isclass(value) and getattr(value, "_is_protocol", False) and value.__module__ == module.__name__
    ]
    return {
        protocol.__name__: {name for name, member in vars(protocol).items() if callable(member) and name[0] != "_"}
        for protocol in protocols
    }


def calls_in(node: ast.AST) -> tuple[set[str], set[str]]:
    """The attribute names called in ``node`` (``x.name(...)``) and the plain functions it calls."""
    methods, functions = set(), set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            if isinstance(call.func, ast.Attribute):
                methods.add(call.func.attr)
            elif isinstance(call.func, ast.Name):
                functions.add(call.func.id)
    return methods, functions


def asserts(node: ast.AST) -> bool:
    return any(
        isinstance(child, ast.Assert)
        or (isinstance(child, ast.Attribute) and child.attr == "raises")  # pytest.raises(...)
        for child in ast.walk(node)
    )


def exercised() -> set[str]:
    """Method names called by a test that runs on every implementation and asserts."""
    found: set[str] = set()
    for path in sorted(HERE.glob("test_*.py")):
        tree = ast.parse(path.read_text())
        helpers = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
        for test in helpers.values():
            parameters = {argument.arg for argument in test.args.args}
            if not test.name.startswith("test_") or not parameters & BACKEND_FIXTURES or not asserts(test):
                continue
            pending, seen = [test.name], set()
            while pending:
                name = pending.pop()
                if name in seen or name not in helpers:
                    continue
                seen.add(name)
                methods, functions = calls_in(helpers[name])
                found |= methods
                pending.extend(functions)
    return found


def test_the_fixtures_run_each_test_on_memory_the_engine_moto_and_dynamodb_local():
    names = [getattr(param, "values", (param,))[0] for param in conftest.IMPLEMENTATIONS]
    assert names == ["memory", "engine", "moto", "dynamodb-local"]


def test_every_port_method_has_a_contract_test():
    methods = port_methods()
    assert {"Board", "BoardIndex", "ItemCatalog", "BoardRegistry"} <= set(methods)
    called = exercised()
    missing = {port: sorted(names - called) for port, names in methods.items() if names - called}
    assert missing == {}
