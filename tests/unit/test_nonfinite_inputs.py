"""Non-finite gradients, policies and votes reaching a mechanism raise; nothing is released.

Hypothesis puts NaN/±inf at random positions of otherwise valid inputs
of every mechanism (numpy and torch), of the teacher (a policy network that outputs NaN),
of LDPA3C's GradientSubmission and of the gradient privatizer learner mixin, and checks
that each raises a ``ValueError`` that says the input must be finite, and that no release
is recorded (ledgers, release metrics) when it does.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rllib_privacy.algorithms.ldp_a3c.submission import GradientSubmission
from rllib_privacy.learners.gradient_privatizer import LDPGradientPrivatizerMixin
from rllib_privacy.mechanisms import (
    GradientMechanism,
    dirichlet_mechanism,
    gaussian_noisy_max,
    instance_laplace,
    laplace_gradient,
    noisy_max,
    projected_random_sign,
)
from rllib_privacy.teachers import DirichletTeacher, TeacherSettings

FAST = settings(max_examples=30, deadline=None, derandomize=True)

NON_FINITE = st.sampled_from([math.nan, math.inf, -math.inf])

#: A message that says what was wrong with the input.
FINITE_MESSAGE = r"(?i)finite|nan"


@st.composite
def poisoned(draw: st.DrawFn, *, low: float = -10.0, high: float = 10.0, max_size: int = 24):
    """A float64 vector with at least one NaN/±inf entry at a random position."""
    size = draw(st.integers(1, max_size))
    values = draw(
        st.lists(
            st.floats(low, high, allow_nan=False, allow_infinity=False),
            min_size=size,
            max_size=size,
        )
    )
    positions = draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=size, unique=True))
    for position in positions:
        values[position] = draw(NON_FINITE)
    return np.asarray(values, dtype=np.float64)


def as_kind(array: np.ndarray, kind: str) -> Any:
    return torch.as_tensor(array, dtype=torch.float32) if kind == "torch" else array


KINDS = ["numpy", "torch"]


# --- gradient mechanisms --------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@FAST
@given(grad=poisoned())
def test_laplace_gradient_rejects_non_finite_gradients(kind: str, grad: np.ndarray) -> None:
    with pytest.raises(ValueError, match=FINITE_MESSAGE):
        laplace_gradient(as_kind(grad, kind), epsilon=1.0, clip=1.0, rng=np.random.default_rng(0))


@pytest.mark.parametrize("kind", KINDS)
@FAST
@given(grad=poisoned())
def test_projected_random_sign_rejects_non_finite_gradients(kind: str, grad: np.ndarray) -> None:
    with pytest.raises(ValueError, match=FINITE_MESSAGE):
        projected_random_sign(
            as_kind(grad, kind), epsilon=5.0, clip=1.0, rng=np.random.default_rng(0)
        )


@pytest.mark.parametrize("name", ["laplace", "prs"])
@pytest.mark.parametrize("kind", KINDS)
@FAST
@given(grad=poisoned())
def test_gradient_mechanism_privatize_rejects_non_finite(
    name: str, kind: str, grad: np.ndarray
) -> None:
    mechanism = GradientMechanism(name=name, epsilon=2.0, clip=1.0)
    with pytest.raises(ValueError, match=FINITE_MESSAGE):
        mechanism.privatize(as_kind(grad, kind), np.random.default_rng(0))


# --- policies (Dirichlet) and the teacher ----------------------------------------------


@st.composite
def poisoned_policies(draw: st.DrawFn) -> np.ndarray:
    """(rows, m) probability vectors with NaN/±inf put into random cells."""
    rows, actions = draw(st.integers(1, 4)), draw(st.integers(2, 6))
    policy = np.full((rows, actions), 1.0 / actions)
    cells = draw(
        st.lists(st.integers(0, rows * actions - 1), min_size=1, max_size=rows, unique=True)
    )
    for cell in cells:
        policy.flat[cell] = draw(NON_FINITE)
    return policy


@pytest.mark.parametrize("kind", KINDS)
@FAST
@given(policy=poisoned_policies())
def test_dirichlet_mechanism_rejects_non_finite_policies(kind: str, policy: np.ndarray) -> None:
    eta = 0.5 / (policy.shape[1] + 1)  # η < 1/m
    rng: Any = np.random.default_rng(0)
    if kind == "torch":
        rng = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match=FINITE_MESSAGE):
        dirichlet_mechanism(as_kind(policy, kind), k=5.0, eta=eta, rng=rng)


class NaNPolicyModule:
    """A teacher network whose outputs are NaN (diverged weights) for every state."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Discrete(3)

    def __init__(self, poison: float) -> None:
        self.poison = poison

    def forward_inference(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        logits = torch.zeros(batch["obs"].shape[0], 3)
        logits[:, 1] = self.poison
        return {"action_dist_inputs": logits}


@pytest.mark.parametrize(
    "mechanism",
    ["dirichlet", "none"],
)
@FAST
@given(poison=NON_FINITE, rows=st.integers(1, 5))
def test_teacher_with_a_nan_policy_raises_and_records_no_release(
    mechanism: str, poison: float, rows: int
) -> None:
    # Softmax of logits with NaN or +inf is NaN; -inf alone gives a valid policy.
    teacher_settings = TeacherSettings(
        mechanism=mechanism,
        k=20.0,
        eta=0.1,
        tau=1e-3,
        lipschitz=1.0,
        seed=0,
        delta_samples=1000,
    )
    teacher = DirichletTeacher(NaNPolicyModule(poison), teacher_settings)
    teacher.start_rollout(expected_states=rows)
    before = teacher.get_state()
    observations = np.zeros((rows, 3), np.float32)
    if poison == -math.inf:
        answer = teacher.answer(observations)
        assert answer.policies is None or np.all(np.isfinite(answer.policies))
        return
    with pytest.raises(ValueError, match=FINITE_MESSAGE):
        teacher.answer(observations)
    after = teacher.get_state()
    assert after["ledger"] == before["ledger"], "a refused answer must not be recorded"


# --- votes (PATE) -------------------------------------------------------------------------


@st.composite
def poisoned_votes(draw: st.DrawFn) -> np.ndarray:
    """(queries, classes) vote counts with NaN/±inf put into random cells."""
    rows, classes = draw(st.integers(1, 4)), draw(st.integers(2, 6))
    votes = np.asarray(
        draw(st.lists(st.integers(0, 50), min_size=rows * classes, max_size=rows * classes)),
        dtype=np.float64,
    ).reshape(rows, classes)
    cells = draw(
        st.lists(st.integers(0, rows * classes - 1), min_size=1, max_size=rows, unique=True)
    )
    for cell in cells:
        votes.flat[cell] = draw(NON_FINITE)
    return votes


@FAST
@given(votes=poisoned_votes())
def test_noisy_max_rejects_non_finite_votes(votes: np.ndarray) -> None:
    with pytest.raises(ValueError, match=FINITE_MESSAGE):
        noisy_max(votes, gamma=0.1, rng=np.random.default_rng(0))


@FAST
@given(votes=poisoned_votes())
def test_gaussian_noisy_max_rejects_non_finite_votes(votes: np.ndarray) -> None:
    with pytest.raises(ValueError, match=FINITE_MESSAGE):
        gaussian_noisy_max(votes, sigma=2.0, rng=np.random.default_rng(0))


# --- instance-wise Laplace ------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@FAST
@given(values=poisoned())
def test_instance_laplace_rejects_non_finite_values(kind: str, values: np.ndarray) -> None:
    scales = np.ones(values.shape)
    with pytest.raises(ValueError, match=FINITE_MESSAGE):
        instance_laplace(as_kind(values, kind), scales, rng=np.random.default_rng(0))


@FAST
@given(scales=poisoned(low=0.1, high=5.0))
def test_instance_laplace_rejects_non_finite_scales(scales: np.ndarray) -> None:
    values = np.zeros(scales.shape)
    with pytest.raises(ValueError, match=r"(?i)scale"):
        instance_laplace(values, scales, rng=np.random.default_rng(0))


# --- LDPA3C: what a local agent may send --------------------------------------------------


@FAST
@given(grad=poisoned())
def test_gradient_submission_rejects_non_finite_gradients(grad: np.ndarray) -> None:
    with pytest.raises(ValueError, match=FINITE_MESSAGE):
        GradientSubmission(
            agent_id="agent-0",
            agent_sequence=1,
            gradient=grad.astype(np.float32),
            epsilon=1.0,
            mechanism="laplace",
            score=10.0,
            env_steps=10,
            weights_version=0,
        )


# --- the gradient privatizer learner mixin --------------------------------------------------


class _RecordingMetrics:
    def __init__(self) -> None:
        self.logged: list[tuple[Any, Any]] = []

    def log_value(self, key: Any, value: Any, **kwargs: Any) -> None:
        self.logged.append((key, value))


class _BaseLearner:
    """Stands in for a TorchLearner: RLlib's own postprocessing returns the gradients."""

    def postprocess_gradients_for_module(
        self, *, module_id: str, config: Any = None, module_gradients_dict: dict
    ) -> dict:
        return module_gradients_dict


class _PrivatizingLearner(LDPGradientPrivatizerMixin, _BaseLearner):
    def __init__(self) -> None:
        self.metrics = _RecordingMetrics()


class _Config:
    def __init__(self, name: str) -> None:
        self.learner_config_dict = {"ldp_gradient": {"name": name, "epsilon": 2.0, "clip": 1.0}}


@pytest.mark.parametrize("name", ["laplace", "prs"])
@FAST
@given(grad=poisoned(), split=st.integers(0, 24))
def test_privatizer_mixin_raises_on_non_finite_gradients_and_logs_no_release(
    name: str, grad: np.ndarray, split: int
) -> None:
    learner = _PrivatizingLearner()
    learner.set_privatizer_rng(np.random.default_rng(0))
    tensor = torch.as_tensor(grad, dtype=torch.float32)
    split = min(split, tensor.numel())
    grads = {"w": tensor[:split].clone(), "b": tensor[split:].clone()}
    grads = {ref: g for ref, g in grads.items() if g.numel()}
    with pytest.raises(ValueError, match=FINITE_MESSAGE):
        learner.postprocess_gradients_for_module(
            module_id="default_policy", config=_Config(name), module_gradients_dict=grads
        )
    assert learner.metrics.logged == [], "no release may be logged for a refused gradient"


def test_privatizer_mixin_releases_finite_gradients() -> None:
    # The positive control of the property above: the same setup releases finite input.
    learner = _PrivatizingLearner()
    learner.set_privatizer_rng(np.random.default_rng(0))
    grads = {"w": torch.ones(3), "b": torch.zeros(2)}
    out = learner.postprocess_gradients_for_module(
        module_id="default_policy", config=_Config("laplace"), module_gradients_dict=grads
    )
    assert set(out) == {"w", "b"}
    assert all(torch.isfinite(g).all() for g in out.values())
    assert not torch.equal(out["w"], grads["w"])  # Noise was added.
    # The noise scale, and the ledger's spend after this one release.
    logged = {"/".join(key[1:]): value for key, value in learner.metrics.logged}
    assert logged == {
        "ldp/noise_scale": pytest.approx(0.5),
        "privacy/epsilon_spent": 2.0,
        "privacy/delta_spent": 0.0,
        "privacy/releases": 1,
    }
