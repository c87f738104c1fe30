"""What a new user meets in the first hour: top-level imports, fast --help, early errors.

Each test here pins one friction point of issue #14 (the CLI ones run ``rllib`` or
``rllib-privacy`` in-process unless the test is about what a fresh process imports).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import rllib_privacy

HEAVY_MODULES = ("ray", "torch", "gymnasium")


def _imported_after(code: str) -> dict[str, bool]:
    """Which heavy modules a fresh interpreter has imported after running ``code``."""
    probe = textwrap.dedent(code) + textwrap.dedent(
        f"""
        import json, sys
        print(json.dumps({{m: m in sys.modules for m in {HEAVY_MODULES!r}}}))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_import_package_imports_no_ray_torch_or_gymnasium() -> None:
    assert _imported_after("import rllib_privacy") == dict.fromkeys(HEAVY_MODULES, False)


@pytest.mark.parametrize(
    ("main", "argv"),
    [
        ("rllib_main", ["--help"]),
        ("rllib_main", ["train", "--help"]),
        ("tools_main", ["--help"]),
        ("tools_main", ["list", "--help"]),
        ("tools_main", ["plot", "--help"]),
        ("tools_main", ["ilm-evaluate", "--help"]),
        ("tools_main", ["pate-epsilon", "--help"]),
    ],
)
def test_help_imports_no_ray_torch_or_gymnasium(main: str, argv: list[str]) -> None:
    # What the console scripts run; --help must answer without the heavy imports (about
    # 5-7 s before, well under a second after).
    imported = _imported_after(
        f"""
        import contextlib, io
        from rllib_privacy import cli
        with contextlib.redirect_stdout(io.StringIO()) as out:
            code = cli.{main}({argv!r})
        assert code == 0, code
        assert "usage:" in out.getvalue()
        """
    )
    assert imported == dict.fromkeys(HEAVY_MODULES, False)


def test_all_lists_every_export_and_each_resolves() -> None:
    assert set(rllib_privacy.__all__) == {"__version__", "register", *rllib_privacy._EXPORTS}
    for name in rllib_privacy.__all__:
        assert getattr(rllib_privacy, name) is not None, name
    assert set(rllib_privacy.__all__) <= set(dir(rllib_privacy))
    with pytest.raises(AttributeError, match="LDPA3CConf"):
        rllib_privacy.LDPA3CConf  # noqa: B018


def test_top_level_config_classes_are_the_real_ones_and_registered() -> None:
    from ray.tune.registry import get_trainable_cls

    from rllib_privacy import KickstartPPOConfig, LDPA3CConfig
    from rllib_privacy.algorithms.kickstart_ppo import KickstartPPO
    from rllib_privacy.algorithms.ldp_a3c import LDPA3C

    assert LDPA3CConfig is LDPA3C.get_default_config().__class__
    assert KickstartPPOConfig is KickstartPPO.get_default_config().__class__
    assert get_trainable_cls("LDPA3C") is LDPA3C


def test_taking_a_config_class_registers_algorithms_in_a_fresh_process() -> None:
    # A user script: take the config from the top level, then name the algorithm in Tune.
    code = """
        from rllib_privacy import LDPA3CConfig
        from ray.tune.registry import get_trainable_cls
        assert get_trainable_cls("LDPA3C").__name__ == "LDPA3C"
        assert get_trainable_cls("KickstartPPO").__name__ == "KickstartPPO"
        """
    assert _imported_after(code)["ray"]
