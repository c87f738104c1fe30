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
