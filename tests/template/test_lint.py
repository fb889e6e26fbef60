"""cfn-lint with the serverless rules (cfn-lint-serverless) reports nothing on template.yaml, and the rules run."""

from __future__ import annotations

from cfnlint.api import ManualArgs, lint, lint_file

from tests.template.conftest import TEMPLATE

SERVERLESS_RULES = ManualArgs(append_rules=["cfn_lint_serverless.rules"], regions=["us-east-1"])


def test_cfn_lint_with_serverless_rules_reports_nothing():
    assert [str(match) for match in lint_file(TEMPLATE, config=SERVERLESS_RULES)] == []


def test_the_serverless_rules_are_loaded():
    # Given the template without the API's access logs, then the serverless rule ES2000 reports it
    text = TEMPLATE.read_text(encoding="utf-8")
    start = text.index("      AccessLogSettings:")
    end = text.index("\n\n", start)
    matches = lint(text[:start] + text[end:], config=SERVERLESS_RULES)
    assert "ES2000" in {match.rule.id for match in matches}
