"""Rules every file of the repository keeps, and the release's bookkeeping.

- Docstrings cross-reference in mkdocstrings' syntax (``[Ledger][rllib_privacy.accounting.Ledger]``
  or backticks): a Sphinx role (``:class:`...` ``) shows literally on the API pages.
- Code, comments and docs point only to what a reader of this repository has: no design
  notes kept elsewhere, no issue numbers of a tracker the repository does not ship.
- CI and pre-commit run the same static checks, the type checker among them, and every
  ``# type: ignore`` in the package names its error code and its reason; the version is one
  number everywhere; the changelog follows Keep a Changelog; the deprecation policy is stated.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

import rllib_privacy

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "rllib_privacy"
#: What the text rules read: the package, its tests, benchmarks, docs and shipped files.
TEXT_ROOTS = ("rllib_privacy", "tests", "benchmarks", "docs", "tuned_configs")
TEXT_FILES = (
    "README.md",
    "CHANGELOG.md",
    "pyproject.toml",
    "mkdocs.yml",
    ".ci/run",
    ".pre-commit-config.yaml",
)
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".sh"}
#: Files that hold these checks themselves, so they spell out what they look for.
CHECK_FILES = {Path(__file__).resolve(), REPO / "tests" / "e2e" / "test_repo_docs.py"}

#: ``:class:`x```, ``:py:meth:`x``` and every other Sphinx role.
SPHINX_ROLE = re.compile(r"(?<![\w:]):(?:py:)?[a-z]+:`")
#: References a reader of the repository cannot follow: design notes kept outside it, and
#: issue numbers (``issue #7``, ``Issue 14``, ``before #13``).
OUTSIDE_REFERENCE = re.compile(
    r"DESIGN\.md|DESIGN ?§|\.\./shared\b|/work/shared\b"
    r"|\b[Ii]ssues? #?\d+"
    r"|(?<![\w&#/.\-\"'`])#\d+\b"
)


def _text_files() -> Iterator[Path]:
    for root in TEXT_ROOTS:
        for path in sorted((REPO / root).rglob("*")):
            parts = set(path.relative_to(REPO).parts)
            if path.is_file() and path.suffix in TEXT_SUFFIXES and "__pycache__" not in parts:
                # Fixtures are data written by other programs, not prose of ours.
                if "fixtures" not in parts:
                    yield path
    for name in TEXT_FILES:
        if (REPO / name).is_file():
            yield REPO / name


def _hits(pattern: re.Pattern[str], paths: Iterator[Path]) -> list[str]:
    return [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in paths
        if path.resolve() not in CHECK_FILES
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]


def test_no_sphinx_role_in_the_package_or_the_docs() -> None:
    paths = [*sorted(PACKAGE.rglob("*.py")), *sorted((REPO / "docs").rglob("*.md"))]
    hits = _hits(SPHINX_ROLE, iter(paths))
    assert not hits, (
        "Sphinx roles show literally on the mkdocstrings site; write [Name][dotted.path] or "
        "``Name`` instead:\n" + "\n".join(hits)
    )


def test_no_reference_to_files_or_issues_outside_the_repository() -> None:
    hits = _hits(OUTSIDE_REFERENCE, _text_files())
    assert not hits, (
        "references a reader of this repository cannot follow (say what is meant, or point "
        "to docs/ or a paper):\n" + "\n".join(hits)
    )


@pytest.mark.parametrize(
    ("text", "pattern", "found"),
    [
        (":class:`~rllib_privacy.accounting.Ledger`", SPHINX_ROLE, True),
        (":py:meth:`record`", SPHINX_ROLE, True),
        ("[Ledger][rllib_privacy.accounting.Ledger] and ``Ledger``", SPHINX_ROLE, False),
        ("note: ``x``", SPHINX_ROLE, False),
        ("see DESIGN.md §2", OUTSIDE_REFERENCE, True),
        ("the formulas (DESIGN §4.5)", OUTSIDE_REFERENCE, True),
        ("../shared/papers/pate.pdf", OUTSIDE_REFERENCE, True),
        ("Issue #7 part 4.", OUTSIDE_REFERENCE, True),
        ("fixed before #13", OUTSIDE_REFERENCE, True),
        ("the id a0#1 and the anchor (ldp-a3c.md#yaml-keys)", OUTSIDE_REFERENCE, False),
        ("color: '#333' and &#8212;", OUTSIDE_REFERENCE, False),
    ],
)
def test_the_rules_patterns(text: str, pattern: re.Pattern[str], found: bool) -> None:
    assert bool(pattern.search(text)) is found


# --- CI and pre-commit -----------------------------------------------------------------------

STATIC_CHECKS = ("ruff check", "ruff format --check", "lint-imports", "mypy")
#: ``# type: ignore[code]  # why``: the codes mypy needs silenced and, on the line, the reason.
EXPLAINED_IGNORE = re.compile(r"# type: ignore\[[a-z-]+(?:, ?[a-z-]+)*\]  # \S")


def test_ci_runs_the_static_checks_before_the_tests() -> None:
    lines = [
        line.strip()
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    tests = next(i for i, line in enumerate(lines) if "pytest" in line)
    install = next(i for i, line in enumerate(lines) if '".[test]"' in line)
    for check in STATIC_CHECKS:
        at = [i for i, line in enumerate(lines) if line.startswith(check)]
        assert at and install < at[0] < tests, (check, lines)


def test_every_type_ignore_names_its_code_and_its_reason() -> None:
    unexplained = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "type: ignore" in line and not EXPLAINED_IGNORE.search(line)
    ]
    assert not unexplained, unexplained


def test_pre_commit_runs_the_same_checks() -> None:
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    entries = [hook["entry"] for repo in config["repos"] for hook in repo["hooks"]]
    for check in STATIC_CHECKS:
        assert any(entry.startswith(check) for entry in entries), (check, entries)


# --- the release -----------------------------------------------------------------------------

CHANGELOG = (REPO / "CHANGELOG.md").read_text()
RELEASE_HEADING = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.M)
#: The kinds of change Keep a Changelog 1.1.0 names.
CHANGE_KINDS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def test_the_version_is_one_number_everywhere() -> None:
    pyproject = re.search(r'^version = "([^"]+)"$', (REPO / "pyproject.toml").read_text(), re.M)
    assert pyproject is not None
    newest = RELEASE_HEADING.search(CHANGELOG)
    assert newest is not None
    assert pyproject.group(1) == rllib_privacy.__version__ == newest.group(1)


def test_the_changelog_follows_keep_a_changelog() -> None:
    assert CHANGELOG.startswith("# Changelog\n")
    assert "https://keepachangelog.com/en/1.1.0/" in CHANGELOG
    headings = re.findall(r"^## (.+)$", CHANGELOG, re.M)
    assert headings[0] == "[Unreleased]", headings
    releases = RELEASE_HEADING.findall(CHANGELOG)
    assert len(releases) == len(headings) - 1, headings  # Every other one is a release.
    versions = [version for version, _ in releases]
    assert versions == sorted(versions, key=_version_key, reverse=True), versions
    dates = [date for _, date in releases]
    assert dates == sorted(dates, reverse=True), dates
    kinds = set(re.findall(r"^### (.+)$", CHANGELOG, re.M))
    assert kinds <= CHANGE_KINDS, kinds - CHANGE_KINDS


def test_the_deprecation_policy_is_stated_and_linked() -> None:
    page = (REPO / "docs" / "versioning.md").read_text()
    assert "warns for one minor version, then goes" in page
    assert "versioning.md" in (REPO / "mkdocs.yml").read_text()
    assert "(docs/versioning.md)" in (REPO / "README.md").read_text()
