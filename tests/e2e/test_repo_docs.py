"""The README's and the docs site's promises.

The README is a short page: the two quick-start commands (CI runs the test one verbatim),
links that resolve, under 200 lines. The MkDocs site (mkdocs.yml, docs/) documents every
config key and shipped YAML, every page in its nav exists, it builds with ``--strict``, and
neither it nor the code points users to things they do not have (DESIGN sections, README
sections that moved to the docs). Every shell command of the README and docs/ is run or
checked (docs that run: a renamed key breaks a test, not a user), the quick start's duration
is quoted from benchmarks/RESULTS.md, and no docstring uses a Sphinx role.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import shlex
import shutil
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
    # Every cross-reference rendered: no Sphinx role shown literally on a built page.
    literal = [
        str(page.relative_to(tmp_path))
        for page in tmp_path.rglob("*.html")
        if re.search(r":(class|mod|func|data|meth|attr|exc|obj|ref):(`|<code>)", page.read_text())
    ]
    assert not literal, f"built pages that show Sphinx roles: {literal}"


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


# ---- docs that run: every shell command of the README and docs/ ------------------------------
#
# Every line of a ```bash block (and every `$ ` line of a ```console block) is a command, split
# at `&&`. Each one is run the cheapest way that still fails when the docs go stale:
#   - `rllib train ...`: validated in-process with `--dry-run` (the experiment file, every
#     key and every override); the quick start itself also runs for real, briefly (one
#     iteration: test_quick_start_command_runs_and_prints_one_tensorboard_command);
#   - `rllib-privacy plot DIR ...`: run on result folders written for DIR's experiment from
#     its YAML's own config (so `--group-by KEY` must be one of its keys), with synthetic
#     curves; `rllib-privacy pate-epsilon` / `list`: run;
#   - the allowlist (ALLOWED): commands a test cannot run, each with its reason and the
#     check that is made instead (argument parsing, the named files, tools and extras exist).
# A command that fits none of these fails the test: give it a check or an allowlist entry.

#: Placeholders of the docs and what a test substitutes for them.
PLACEHOLDERS = {
    "sweep.yaml": "tuned_configs/ldp_a3c_first_sweep.yaml",  # docs/cli.md: "a sweep file"
    "HEAD_IP:6379": "127.0.0.1:6379",  # docs/cluster.md: a cluster's head node
}
#: Commands (by their first words) a test does not run, why, and what it checks instead.
ALLOWED = {
    "pip install": "installs packages (network, changes the environment): the extras exist",
    "pip wheel": "builds the wheel (tests/e2e/test_packaged_configs.py builds one and runs the "
    "quick start from it, slow): the package data it needs is declared",
    "python -m pytest": "the test suite itself: the paths and markers exist",
    "ruff": "CI's static checks (tests/e2e/test_repo_rules.py checks CI runs them): on PATH",
    "lint-imports": "CI's static checks: on PATH, contracts in pyproject.toml",
    "mypy": "CI's static checks: on PATH, configured in pyproject.toml",
    "mkdocs build": "test_mkdocs_build_strict builds the site: mkdocs.yml exists",
    "mkdocs serve": "a server that does not return: mkdocs.yml exists",
    "tensorboard": "a server that does not return: it is installed and the logdir is the "
    "results folder (test_quick_start_command_runs_and_prints_one_tensorboard_command)",
    "ray start": "starts a cluster node: its arguments parse (Ray's click command)",
    "rllib-privacy ilm-evaluate": "needs a trained DQN checkpoint (minutes): arguments parse",
    "python benchmarks/": "benchmarks run for minutes to hours (tests/e2e/test_benchmark_*.py "
    "run each on a tiny setting): arguments parse with the script's own parser",
    "python docs/scripts/": "makes a docs image from a finished run: arguments parse with the "
    "script's own parser (its main stops right after parsing)",
}


def _doc_pages() -> list[Path]:
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def _doc_commands() -> dict[str, tuple[str, list[str]]]:
    """``{command text: (first place, tokens)}`` of every documented shell command."""
    commands: dict[str, tuple[str, list[str]]] = {}
    for page in _doc_pages():
        text = page.read_text()
        for match in re.finditer(r"```(bash|console)\n(.*?)```", text, flags=re.S):
            lines = match.group(2).replace("\\\n", " ").splitlines()
            if match.group(1) == "console":
                lines = [line[2:] for line in lines if line.startswith("$ ")]
            for line in lines:
                tokens = shlex.split(line, comments=True)
                where = f"{page.relative_to(REPO)}:{text[: match.start()].count(chr(10)) + 1}"
                while tokens:
                    end = tokens.index("&&") if "&&" in tokens else len(tokens)
                    command = shlex.join(tokens[:end])
                    commands.setdefault(command, (where, tokens[:end]))
                    tokens = tokens[end + 1 :]
    return commands


DOC_COMMANDS = _doc_commands()


def _allowed(command: str) -> str | None:
    return next((prefix for prefix in ALLOWED if command.startswith(prefix)), None)


def _substituted(tokens: list[str], storage: Path) -> list[str]:
    home_results = os.path.expanduser("~/ray_results")
    out = []
    for token in tokens:
        token = PLACEHOLDERS.get(token, token)
        token = token.replace("~/ray_results", str(storage)).replace(home_results, str(storage))
        out.append(token)
    return out


def test_the_docs_have_commands_and_the_scanner_reads_them() -> None:
    assert "rllib train -f tuned_configs/ldp_a3c.yaml" in DOC_COMMANDS
    assert "pip install torch==2.13.0" in DOC_COMMANDS  # split at &&
    # Continuation lines are joined and comments dropped.
    assert any(c.startswith("rllib-privacy plot") and "--band 85" in c for c in DOC_COMMANDS)
    assert not any("#" in c for c in DOC_COMMANDS)


@pytest.mark.parametrize("command", sorted(DOC_COMMANDS), ids=lambda c: c[:60])
def test_documented_command_is_checked(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    where, tokens = DOC_COMMANDS[command]
    monkeypatch.chdir(REPO)
    if tokens[:2] == ["rllib", "train"] or tokens[:4] == [
        "python",
        "-m",
        "rllib_privacy.cli",
        "train",
    ]:
        _dry_run(tokens[tokens.index("train") :], tmp_path, where, capsys)
    elif tokens[:2] == ["rllib-privacy", "plot"]:
        _plot(tokens[2:], tmp_path, where)
    elif tokens[:2] in (["rllib-privacy", "pate-epsilon"], ["rllib-privacy", "list"]):
        _tool(tokens[1:], tmp_path, where)
    elif tokens[:2] == ["rllib-privacy", "configs"]:
        monkeypatch.chdir(tmp_path)  # `configs copy` writes into the current folder
        _tool(tokens[1:], tmp_path, where)
    elif (prefix := _allowed(command)) is not None:
        _check_allowed(prefix, tokens, tmp_path, where)
    else:
        pytest.fail(f"{where}: `{command}` is neither checked nor allowlisted (ALLOWED)")


#: Shipped experiments that other files use as teachers (trained first, as the docs say).
def _shipped_experiment_names() -> set[str]:
    return {
        name
        for path in (REPO / "tuned_configs").glob("*.yaml")
        for name in yaml.safe_load(path.read_text())
    }


def _dry_run(
    args: list[str], tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from rllib_privacy.cli import rllib_main

    args = _substituted(args, tmp_path)
    if "--storage-path" in args:  # A shared folder in the docs; the test's own here.
        args[args.index("--storage-path") + 1] = str(tmp_path)
    if "--resume" in args:
        args.remove("--resume")  # Nothing to resume in a test: the file and options still parse.
    code = rllib_main([*args, "--dry-run"])
    err = capsys.readouterr().err
    teacher = re.search(r"teacher_checkpoint '[^']*/([^'/]+)' does not exist \(train the", err)
    if code == 2 and teacher:
        # A kickstarting student: validating it needs its trained teacher (minutes;
        # tests/plugins/test_kickstart_ray.py trains one and runs the students). Here: the
        # file is valid up to the teacher, which is a shipped experiment the docs train first.
        assert teacher.group(1) in _shipped_experiment_names(), (where, teacher.group(1))
        return
    assert code == 0, f"{where}: `rllib {shlex.join(args)} --dry-run` exited {code}: {err}"


def _tool(args: list[str], tmp_path: Path, where: str) -> None:
    from rllib_privacy.cli import tools_main

    args = _substituted(args, tmp_path)
    if "--votes" in args:  # The docs' votes.npy: 3 queries, 5 teachers, 2 classes.
        import numpy as np

        votes = tmp_path / "votes.npy"
        np.save(votes, np.array([[5, 0], [4, 1], [0, 5]]))
        args[args.index("--votes") + 1] = str(votes)
    code = tools_main(args)
    assert code == 0, f"{where}: `rllib-privacy {shlex.join(args)}` exited {code}"


def _experiment_configs(name: str) -> list[dict[str, Any]]:
    """The trial configs of experiment ``name`` of a shipped YAML (one per grid variant).

    As written in the file, which is what Tune's ``params.json`` holds (a student's teacher
    need not exist for this).
    """
    from ray.tune.search.variant_generator import generate_variants

    for path in sorted((REPO / "tuned_configs").glob("*.yaml")):
        experiments = yaml.safe_load(path.read_text())
        if name in experiments:
            config = {**experiments[name].get("config", {}), "env": experiments[name].get("env")}
            return [variant for _, variant in generate_variants(config)]
    raise AssertionError(f"no shipped YAML has an experiment named {name!r}")


def _write_experiment(folder: Path, configs: list[dict[str, Any]], metrics: list[str]) -> None:
    """Two seeds per config, three iterations each, every metric rising with env steps."""
    for index, config in enumerate(configs):
        for seed in range(2):
            trial = folder / f"trial_{index:05d}_{seed}"
            trial.mkdir(parents=True)
            trial_config = {**config, "seed": seed}
            (trial / "params.json").write_text(json.dumps(trial_config, default=str))
            rows = []
            for iteration in range(1, 4):
                row: dict[str, Any] = {"config": trial_config}
                for key in metrics:
                    node = row
                    *parents, leaf = key.split("/")
                    for part in parents:
                        node = node.setdefault(part, {})
                    node[leaf] = float(100 * iteration + seed)
                row["training_iteration"] = iteration
                rows.append(json.dumps(row, default=str))
            (trial / "result.json").write_text("\n".join(rows) + "\n")


def _plot(args: list[str], tmp_path: Path, where: str) -> None:
    from rllib_privacy import plotting
    from rllib_privacy.cli import tools_main

    args = _substituted(args, tmp_path / "ray_results")
    options = {"--metric": plotting.DEFAULT_METRIC, "--x": plotting.DEFAULT_X_KEYS[0]}
    for option in options:
        if option in args:
            options[option] = args[args.index(option) + 1]
    metrics = [*options.values(), "timesteps_total"]
    folders = [
        a
        for a in args
        if not a.startswith("-")
        and (args.index(a) == 0 or not args[args.index(a) - 1].startswith("-"))
    ]
    for folder in folders:
        path = Path(folder) if Path(folder).is_absolute() else tmp_path / folder
        # The experiment's name is the folder's (docs' run1/ run2/trial_dir: the first sweep).
        name = path.name if path.parent == tmp_path / "ray_results" else "ldp-a3c-first-sweep"
        _write_experiment(path, _experiment_configs(name), metrics)
        args[args.index(folder)] = str(path)
    output = ["--output", str(tmp_path / "curves.png")]
    for flag in ("--output", "-o"):
        if flag in args:
            del args[args.index(flag) : args.index(flag) + 2]
    code = tools_main(["plot", *args, *output])
    assert code == 0, f"{where}: `rllib-privacy plot {shlex.join(args)}` exited {code}"
    assert (tmp_path / "curves.png").is_file()


def _check_allowed(prefix: str, tokens: list[str], tmp_path: Path, where: str) -> None:
    pyproject = (REPO / "pyproject.toml").read_text()
    if prefix == "pip install":
        extras = pyproject.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
        for token in tokens[2:]:
            if match := re.fullmatch(r"\.\[([\w,]+)\]", token):
                for extra in match.group(1).split(","):
                    assert re.search(rf"^{extra}\s*=", extras, flags=re.M), (where, extra)
            elif token == "dist/rllib_privacy-*.whl":  # what the documented `pip wheel` makes
                continue
            elif token not in ("-e", ".") and not re.fullmatch(r"torch==[\d.]+", token):
                raise AssertionError(f"{where}: pip install {token!r}: not checked")
    elif prefix == "pip wheel":
        assert "[tool.setuptools.package-data]" in pyproject, f"{where}: no package data"
        assert (REPO / "rllib_privacy" / "tuned_configs" / "ldp_a3c.yaml").is_file(), where
    elif prefix == "python -m pytest":
        markers = pyproject.split("markers = [", 1)[1].split("]", 1)[0]
        for index, token in enumerate(tokens[3:], start=3):
            if tokens[index - 1] == "-m":
                for word in re.findall(r"\w+", token):
                    assert word in ("not", "and", "or") or f'"{word}:' in markers, (where, word)
            elif not token.startswith("-"):
                assert (REPO / token.split("::")[0]).exists(), f"{where}: no {token}"
    elif prefix in ("ruff", "lint-imports", "mypy"):
        assert shutil.which(tokens[0]), f"{where}: {tokens[0]} is not installed"
        section = {"ruff": "ruff", "lint-imports": "importlinter", "mypy": "mypy"}[prefix]
        assert f"[tool.{section}" in pyproject, f"{where}: pyproject.toml has no [tool.{section}]"
    elif prefix.startswith("mkdocs"):
        assert (REPO / "mkdocs.yml").is_file()
    elif prefix == "tensorboard":
        assert importlib.util.find_spec("tensorboard"), f"{where}: tensorboard not installed"
        assert tokens[1] == "--logdir" and tokens[2].startswith("~/ray_results"), where
    elif prefix == "ray start":
        from ray.scripts.scripts import start

        start.make_context("ray start", _substituted(tokens[2:], tmp_path), resilient_parsing=False)
    elif prefix == "rllib-privacy ilm-evaluate":
        from rllib_privacy.cli.tools import build_tools_parser

        build_tools_parser().parse_args(tokens[1:])
    elif prefix == "python benchmarks/":
        from benchmark_modules import import_benchmark

        script = Path(tokens[1])
        assert (REPO / script).is_file(), f"{where}: no {script}"
        import_benchmark(script.stem).build_parser().parse_args(tokens[2:])
    elif prefix == "python docs/scripts/":
        _parse_only(REPO / tokens[1], tokens[2:], where)


class _ParsedError(Exception):
    """Raised right after a script's arguments parsed: nothing of the script runs."""


def _parse_only(script: Path, args: list[str], where: str) -> None:
    """Run ``script``'s ``main(args)`` until its ArgumentParser has parsed ``args``."""
    import argparse
    import importlib.util

    assert script.is_file(), f"{where}: no {script}"
    spec = importlib.util.spec_from_file_location(f"_docs_script_{script.stem}", script)
    assert spec and spec.loader, where
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    original = argparse.ArgumentParser.parse_args

    def parse_then_stop(self: argparse.ArgumentParser, *a: Any, **kw: Any) -> Any:
        original(self, *a, **kw)  # exits 2 on bad arguments
        raise _ParsedError

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
        with pytest.raises(_ParsedError):
            module.main(args)


def test_a_renamed_key_in_a_documented_command_fails_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # What a new user met: the config key is `privacy_epsilon`, not `epsilon`.
    monkeypatch.chdir(REPO)
    with pytest.raises(AssertionError, match="exited 2"):
        _plot(["~/ray_results/ldp-a3c-first-sweep", "--group-by", "epsilon"], tmp_path, "x")
    assert "did you mean 'privacy_epsilon'" in capsys.readouterr().err
    with pytest.raises(AssertionError, match="exited 2"):
        _dry_run(
            ["train", "-f", "tuned_configs/ldp_a3c.yaml", "--config", '{"privacy_epsilonn": 5}'],
            tmp_path,
            "x",
            capsys,
        )


def test_every_allowlist_entry_is_used() -> None:
    unused = [p for p in ALLOWED if not any(c.startswith(p) for c in DOC_COMMANDS)]
    assert not unused, f"ALLOWED entries no documented command needs: {unused}"


@pytest.mark.ray
@pytest.mark.slow
def test_quick_start_command_runs_and_prints_one_tensorboard_command(tmp_path: Path) -> None:
    # The README's command as written, shortened to one small iteration and kept in
    # tmp_path: the run documented commands point to (`tensorboard --logdir ...`).
    command = _bash_blocks(README.split("## Quick start", 1)[1])[0].split(" && ")[-1]
    assert command == "rllib train -f tuned_configs/ldp_a3c.yaml"
    small = {"aggregator_submissions_per_iteration": 256, "scoring_eval_episodes": 10}
    args = ["--stop", '{"training_iteration": 1}', "--config", json.dumps(small)]
    result = subprocess.run(
        [sys.executable, "-m", "rllib_privacy.cli", *command.split()[1:], *args]
        + ["--storage-path", str(tmp_path), "--ray-num-cpus", "2"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    output = result.stdout + result.stderr
    # Before the run: its size and an estimate; after it: one place for results.
    assert "experiment 'ldp-a3c-privunitg': 1 trial (1 variant(s) x 1 sample(s))" in output
    hints = [line.strip() for line in output.splitlines() if "tensorboard --logdir" in line]
    assert hints == [f"tensorboard --logdir {tmp_path / 'ldp-a3c-privunitg'}"], hints
    assert "driver_artifacts" not in output
    events = list((tmp_path / "ldp-a3c-privunitg").rglob("events.out.tfevents*"))
    assert events, "no TensorBoard events in the results folder"
