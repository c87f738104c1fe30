"""The suite's own rules (tests/conftest.py): no trace outside pytest's folders, slow tests apart.

Each check runs a small pytest session of its own (``pytester``) with the repository's
conftest, so that a broken rule shows here and not as results in a user's home.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from conftest import MACHINE_RAY_ADDRESS_FILE, REAL_RAY_RESULTS

pytest_plugins = ["pytester"]

CONFTEST = (Path(__file__).resolve().parents[1] / "conftest.py").read_text()


def _session(pytester: pytest.Pytester, tests: str, *args: str) -> pytest.RunResult:
    """Runs ``tests`` (a test module's text) in a pytest subprocess under the suite's conftest."""
    pytester.makeconftest(CONFTEST)
    pytester.makeini("[pytest]\naddopts = -m 'not slow'\nmarkers =\n    slow: slow\n")
    pytester.makepyfile(test_inner=tests)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", *args)


def test_a_test_writing_into_ray_results_fails_and_is_named(pytester: pytest.Pytester) -> None:
    result = _session(
        pytester,
        """
import os
from pathlib import Path

def test_writes_results():
    (Path(os.path.expanduser("~/ray_results")) / "PPO_2026-01-01").mkdir(parents=True)

def test_writes_only_tmp_path(tmp_path):
    (tmp_path / "ray_results" / "PPO_2026-01-01").mkdir(parents=True)
""",
    )
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_writes_results*"])
    # ("[" opens a character class in fnmatch patterns: "?" stands for the brackets.)
    result.stdout.fnmatch_lines(["E * the test wrote into ~/ray_results (?'PPO_2026-01-01'?)*"])


def test_the_session_fails_if_the_users_ray_results_gained_an_entry(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The last guard: a write that bypasses HOME (an absolute path) still fails the run.

    The inner session's "user" is a folder of this test: the real home is never written.
    """
    home = tmp_path / "user"
    (home / "ray_results" / "earlier_run").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))  # what the inner session reads as the user's home
    result = _session(
        pytester,
        """
from conftest import REAL_RAY_RESULTS

def test_writes_into_the_users_folder():
    (REAL_RAY_RESULTS / "PPO_2026-01-01").mkdir()
""",
    )
    result.assert_outcomes(passed=1)  # the test itself cannot see it: the session can
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    written = f"tests wrote into the user's {home / 'ray_results'}*PPO_2026-01-01*"
    result.stdout.fnmatch_lines([written])
    assert "earlier_run" not in result.stdout.str()  # only what the session added


def test_home_and_ray_tmpdir_are_private_to_the_session() -> None:
    home = Path(os.environ["HOME"])
    assert home != REAL_RAY_RESULTS.parent
    assert home.name.startswith("home") and "pytest-of-" in str(home)
    ray_tmpdir = os.environ["RAY_TMPDIR"]
    assert Path(ray_tmpdir).name.startswith("pytest-ray-") and Path(ray_tmpdir).is_dir()
    # Ray's temp folder, and the cluster address file in it, are not the machine-wide ones.
    assert Path(ray_tmpdir, "ray", "ray_current_cluster") != MACHINE_RAY_ADDRESS_FILE


def test_an_algorithm_outside_tune_logs_into_tmp_path(tmp_path: Path) -> None:
    # Collection imported Ray (tests/e2e registers the package), so RLlib's default logdir
    # was computed then: the conftest points it at this test's folder.
    trainable = sys.modules["ray.tune.trainable.trainable"]
    assert Path(trainable.DEFAULT_STORAGE_PATH) == tmp_path / "ray_results"


SLOW_AND_FAST = """
import pytest

@pytest.mark.slow
def test_slow():
    pass

def test_fast():
    pass
"""


def test_slow_tests_are_left_out_by_default(pytester: pytest.Pytester) -> None:
    _session(pytester, SLOW_AND_FAST, str(pytester.path)).assert_outcomes(passed=1, deselected=1)
    _session(pytester, SLOW_AND_FAST, "-m", "slow").assert_outcomes(passed=1, deselected=1)


def test_naming_a_test_file_or_id_runs_it_even_if_slow(pytester: pytest.Pytester) -> None:
    _session(pytester, SLOW_AND_FAST, "test_inner.py").assert_outcomes(passed=2)
    _session(pytester, SLOW_AND_FAST, "test_inner.py::test_slow").assert_outcomes(passed=1)
    # ... unless the command line chooses its own marks.
    result = _session(pytester, SLOW_AND_FAST, "test_inner.py", "-m", "not slow")
    result.assert_outcomes(passed=1, deselected=1)


def test_every_benchmark_that_builds_an_algorithm_logs_into_a_temporary_folder() -> None:
    """build_algo() outside Tune writes a timestamped folder into ~/ray_results otherwise."""
    benchmarks = Path(__file__).resolve().parents[2] / "benchmarks"
    builders = [
        path
        for path in sorted(benchmarks.rglob("*.py"))
        if ".build_algo()" in path.read_text() and path.name != "harness.py"
    ]
    assert builders, "no benchmark builds an Algorithm: the check has nothing to check"
    missing = [
        str(path.relative_to(benchmarks))
        for path in builders
        if "log_algorithms_into_a_temporary_folder(" not in path.read_text()
    ]
    assert missing == []
