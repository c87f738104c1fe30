"""The README's and the docs site's promises.

The README is a short page: the two quick-start commands (CI runs the test one verbatim),
links that resolve, under 200 lines. The MkDocs site (mkdocs.yml, docs/) documents every
config key and shipped YAML, every page in its nav exists, it builds with ``--strict``, and
neither it nor the code points users to things they do not have (DESIGN sections, README
sections that moved to the docs).
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
import subprocess
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ray.tune.registry import get_trainable_cls

import rllib_privacy
from rllib_privacy._registration import ALGORITHM_NAMES

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
DOCS = REPO / "docs"
CI_SCRIPT = (REPO / ".ci" / "run").read_text()


def _bash_blocks(text: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def _docs_text() -> str:
    return "\n".join(p.read_text() for p in sorted(DOCS.rglob("*.md")))


def _nav_pages(nav: Any) -> Iterator[str]:
    """Every page path of an mkdocs ``nav`` (nested lists of ``{title: page or list}``)."""
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for item in nav:
            yield from _nav_pages(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from _nav_pages(value)


def _mkdocs_config() -> dict[str, Any]:
    return yaml.safe_load((REPO / "mkdocs.yml").read_text())


def test_readme_is_short() -> None:
    assert len(README.splitlines()) < 200


def test_quick_start_has_the_two_commands() -> None:
    quick_start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = _bash_blocks(quick_start)
    assert len(blocks) == 2
    assert blocks[0].endswith("rllib train -f tuned_configs/ldp_a3c.yaml")
    assert "pytest" in blocks[1]


def test_ci_runs_the_readme_test_command() -> None:
    test_command = _bash_blocks(README.split("## Quick start", 1)[1])[1]
    assert test_command in CI_SCRIPT.splitlines()


def test_ci_builds_the_docs_strictly() -> None:
    lines = CI_SCRIPT.splitlines()
    build = [line for line in lines if "mkdocs build" in line and not line.startswith("#")]
    assert build and all("--strict" in line for line in build)
    assert any('".[docs]"' in line for line in lines)


def test_every_nav_page_exists() -> None:
    pages = list(_nav_pages(_mkdocs_config()["nav"]))
    assert "components/ldp-a3c.md" in pages and "api/mechanisms.md" in pages
    missing = [page for page in pages if not (DOCS / page).is_file()]
    assert not missing, f"mkdocs.yml nav names pages that do not exist: {missing}"


def test_readme_links_resolve() -> None:
    targets = re.findall(r"\]\(([^)\s]+)\)", README)
    local = [t.split("#", 1)[0] for t in targets if not re.match(r"[a-z]+://|#|mailto:", t)]
    assert "docs/components/ldp-a3c.md" in local
    missing = [t for t in local if not (REPO / t).exists()]
    assert not missing, f"README links to missing files: {missing}"


def test_readme_links_every_component_page() -> None:
    for page in sorted((DOCS / "components").glob("*.md")):
        assert f"(docs/components/{page.name})" in README, page.name


def test_no_design_or_readme_section_references_for_users() -> None:
    # Users have neither DESIGN.md nor the README sections that moved into the docs.
    for path in [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]:
        text = path.read_text()
        assert "DESIGN §" not in text and "DESIGN.md" not in text, path
        if path.parent != REPO:
            assert "README" not in text, path


def _comments_and_docstrings(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and every string that stands alone as a statement."""
    previous = tokenize.NEWLINE
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
        elif token.type == tokenize.STRING and previous in (
            tokenize.NEWLINE,
            tokenize.NL,
            tokenize.INDENT,
            tokenize.DEDENT,
        ):
            yield token.start[0], token.string
        if token.type not in (tokenize.COMMENT, tokenize.NL):
            previous = token.type


def test_no_code_comment_points_to_the_readme() -> None:
    package = Path(rllib_privacy.__file__).parent
    hits = [
        f"{path.relative_to(REPO)}:{line}"
        for path in sorted(package.rglob("*.py"))
        for line, text in _comments_and_docstrings(path.read_text())
        if "README" in text
    ]
    assert not hits, f"comments/docstrings that point to the README (use docs/<page>.md): {hits}"


def test_comment_scanner_sees_comments_and_docstrings() -> None:
    source = (
        '"""Module README."""\nx = "README in code"\n\n\ndef f():\n    """README."""\n  # README\n'
    )
    assert [line for line, _ in _comments_and_docstrings(source)] == [1, 6, 7]


def _own_config_keys(config_cls: type) -> set[str]:
    """Keys a config class adds to the nearest RLlib config class it derives from."""
    rllib_base = next(c for c in config_cls.__mro__[1:] if c.__module__.startswith("ray.rllib"))
    own_keys = set(vars(config_cls())) - set(vars(rllib_base()))
    return {k for k in own_keys if not k.startswith("_")}


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_every_config_key_of_our_algorithms_is_documented(name: str) -> None:
    register = getattr(rllib_privacy, "register", None)
    if callable(register):
        register()
    config_cls = type(get_trainable_cls(name).get_default_config())
    own_keys = _own_config_keys(config_cls)
    assert own_keys, f"{config_cls.__name__} adds no keys?"
    components = "\n".join(p.read_text() for p in (DOCS / "components").glob("*.md"))
    missing = sorted(k for k in own_keys if f"`{k}`" not in components)
    assert not missing, f"docs/components/ do not document {config_cls.__name__} keys: {missing}"


def test_every_shipped_yaml_is_mentioned() -> None:
    docs = _docs_text()
    for path in (REPO / "tuned_configs").glob("*.yaml"):
        assert f"tuned_configs/{path.name}" in docs, path.name


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason='needs ".[docs]"')
def test_mkdocs_build_strict(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert (tmp_path / "index.html").is_file()
    assert (tmp_path / "api" / "mechanisms" / "index.html").is_file()


# ---- one source of truth for the quick start's duration -------------------------------------

RESULTS_MD = REPO / "benchmarks" / "RESULTS.md"
#: Where the quick start's measured duration is quoted. To refresh the figures: re-run
#: `python benchmarks/quick_start.py --runs 10 --write-results`, then paste its bold
#: sentence into each of these files (the test below prints it).
QUICK_START_QUOTES = (
    "README.md",
    "docs/getting-started.md",
    "docs/results.md",
    "tuned_configs/ldp_a3c.yaml",
)
_QUOTE = re.compile(
    r"solved in \d+ of \d+ runs; median wall time \d+ s \(max \d+ s\); "
    r"median solved_at [\d,]+ submissions"
)


def _quick_start_sentence() -> str:
    """The headline sentence of RESULTS.md's quick-start section (benchmarks/quick_start.py)."""
    section = RESULTS_MD.read_text().split("<!-- quick_start:start -->", 1)[1]
    section = section.split("<!-- quick_start:end -->", 1)[0]
    match = _QUOTE.search(section)
    assert match, "benchmarks/RESULTS.md's quick-start section has no headline sentence"
    return match.group(0)


def _prose(path: Path) -> str:
    """A file's text with line breaks (and YAML comment markers) folded into spaces."""
    text = path.read_text()
    if path.suffix == ".yaml":
        text = "\n".join(line.lstrip("# ") for line in text.splitlines() if line.startswith("#"))
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("name", QUICK_START_QUOTES)
def test_quick_start_duration_is_quoted_from_results(name: str) -> None:
    expected = _quick_start_sentence()
    quotes = _QUOTE.findall(_prose(REPO / name))
    assert quotes, f"{name}: quote the quick start's figures from RESULTS.md: {expected!r}"
    assert set(quotes) == {expected}, f"{name}: stale quote {quotes}; RESULTS.md: {expected!r}"


@pytest.mark.parametrize("name", ("README.md", "docs/getting-started.md"))
def test_quick_start_has_no_other_duration_estimate(name: str) -> None:
    # The estimate is RESULTS.md's; a second one ("about 3 minutes") goes stale unseen.
    text = (REPO / name).read_text()
    start = text.index("tuned_configs/ldp_a3c.yaml")
    section = text[start : text.index("\n## ", start)]
    assert not re.search(r"\d\s*(minutes?|min)\b", section), name


def test_quote_pattern_reads_the_results_sentence() -> None:
    sentence = (
        "**solved in 7 of 10 runs; median wall time 95 s (max 120 s); median solved_at "
        "199,430 submissions.**"
    )
    match = _QUOTE.search(sentence)
    assert match and match.group(0) == sentence.strip("*.")


# ---- API docstrings render: no Sphinx roles ---------------------------------------------------

_SPHINX_ROLE = re.compile(r":(class|mod|func|data|meth|attr|exc|obj|ref):`")


def test_no_sphinx_roles_in_docstrings_or_docs() -> None:
    # The API pages are rendered by mkdocstrings, which shows `:class:` literally; use
    # [name][dotted.path] cross-references or code spans instead.
    package = Path(rllib_privacy.__file__).parent
    hits = [
        f"{path.relative_to(REPO)}:{line}"
        for path in sorted(package.rglob("*.py"))
        for line, text in _comments_and_docstrings(path.read_text())
        if _SPHINX_ROLE.search(text)
    ]
    hits += [
        str(p.relative_to(REPO)) for p in DOCS.rglob("*.md") if _SPHINX_ROLE.search(p.read_text())
    ]
    assert not hits, f"Sphinx roles that mkdocstrings does not render: {hits}"


def test_sphinx_role_pattern_matches_roles() -> None:
    assert _SPHINX_ROLE.search("see :class:`Foo` and :mod:`bar`")
    assert not _SPHINX_ROLE.search("see [`Foo`][rllib_privacy.Foo] and `bar`")
