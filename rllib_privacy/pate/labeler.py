"""The PATE aggregator for RL: teacher ensemble + noisy max + the one global ledger.

:class:`PATELabeler` is the trusted party of PATE. It holds the teachers (trained on
private data), counts their votes on the states the student sends, answers with noisy-max
labels while the budget lasts, and records every answered query in a
:class:`~rllib_privacy.accounting.PATELedger`. The student side (EnvRunners, the learner)
only ever receives labels, ``-1`` for "not answered", and aggregate metrics.

:class:`~rllib_privacy.algorithms.pate_ppo.PATEPPO` runs exactly one labeler per
algorithm, as a Ray actor (:func:`create_labeler_actor`), so that every EnvRunner spends
from the same budget: an actor handles one call at a time, so two EnvRunners can never
both spend the last query.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rllib_privacy.accounting import PATELedger
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.mechanisms import NoiseStreams, noisy_max, plurality
from rllib_privacy.pate.teachers import TeacherEnsemble

__all__ = ["UNLABELED", "PATELabeler", "create_labeler_actor"]

#: Label value of a state the ensemble did not answer.
UNLABELED = -1


class PATELabeler:
    """Noisy-max labels from a teacher ensemble under one budgeted ledger.

    Args:
        teacher_dirs: RLModule directories of the teachers.
        observation_space: The student's observation space.
        action_space: The student's (Discrete) action space.
        ledger: The ledger (γ, δ, budget) to spend from.
        seed: Seed of the noise; None draws it from OS entropy (use a seed only for
            experiments). A fresh OS-entropy nonce is mixed in per labeler (see
            ``NoiseStreams``), so a restored labeler never repeats earlier noise.
        secure_mode: Floating-point-safe noisy max (OpenDP Laplace; see ``noisy_max``);
            the seed then does not drive the noise.
        track_label_agreement: Count how often the noisy label equals the noiseless
            plurality. NOT private (it is a function of the votes); off for deployments.

    """

    def __init__(
        self,
        teacher_dirs: Sequence[str | Path],
        *,
        observation_space: gym.Space,
        action_space: gym.Space,
        ledger: PATELedger,
        seed: int | None = None,
        track_label_agreement: bool = True,
        secure_mode: bool = False,
    ) -> None:
        # Ray reports an exception raised in an actor's __init__ only as text: keep a
        # configuration error and raise it from ping(), where it keeps its type.
        self._init_error: PrivacyConfigError | None = None
        try:
            self._ensemble = TeacherEnsemble(
                teacher_dirs, observation_space=observation_space, action_space=action_space
            )
        except PrivacyConfigError as e:
            self._init_error = e
        self._ledger = ledger
        self._rng = NoiseStreams(seed).spawn()
        self._secure_mode = bool(secure_mode)
        self._track_agreement = track_label_agreement
        self._agreements = 0
        self._requested = 0
        self._stopped = False

    def ping(self) -> int:
        """Return the number of teachers (used to wait until the actor is up).

        Raises:
            PrivacyConfigError: If the teachers could not be loaded (e.g. their spaces
                differ from the student's).

        """
        if self._init_error is not None:
            raise self._init_error
        return len(self._ensemble)

    def label(self, observations: Any) -> tuple[np.ndarray, bool]:
        """Answer label queries for ``observations`` (in order) while the budget lasts.

        Args:
            observations: Student states, shape ``(N, *obs_shape)``.

        Returns:
            ``(labels, exhausted)``: int64 labels of shape ``(N,)`` with
            :data:`UNLABELED` for every state past the budget, and whether the labeler
            has stopped answering for good (the first query that did not fit stops it).

        """
        observations = np.asarray(observations)
        labels = np.full(len(observations), UNLABELED, dtype=np.int64)
        self._requested += len(observations)
        if self._stopped or not len(observations):
            return labels, self._stopped
        ledger = self._ledger
        if ledger.budget_basis == "data_independent":
            # The budget does not need the votes to decide: only states that will be
            # answered are shown to the teachers.
            answered = ledger.affordable(num_queries=len(observations))
            votes = self._ensemble.votes(observations[:answered])
        else:
            votes = self._ensemble.votes(observations)
            answered = ledger.affordable(votes)
            votes = votes[:answered]
        if answered:
            ledger.record(votes)
            labels[:answered] = noisy_max(
                votes, gamma=ledger.gamma, rng=self._rng, secure_mode=self._secure_mode
            )
            if self._track_agreement:
                self._agreements += int(np.sum(labels[:answered] == plurality(votes)))
        # Stop at the first query that does not fit. (With the data-dependent basis a
        # later state with a larger vote gap might still fit; answering it would pick
        # queries by their private votes.)
        self._stopped = answered < len(observations) or (
            ledger.budget_basis == "data_independent" and not ledger.can_afford(num_queries=1)
        )
        return labels, self._stopped

    def metrics(self) -> dict[str, float]:
        """Ledger-derived metrics (``label_agreement`` is a non-private diagnostic)."""
        ledger = self._ledger
        queries = ledger.num_queries
        agreement = self._agreements / queries if queries and self._track_agreement else math.nan
        return {
            "queries": queries,
            "requested": self._requested,
            "epsilon": ledger.epsilon,
            "epsilon_data_independent": ledger.epsilon_data_independent,
            "delta": ledger.delta,
            "budget_exhausted": float(self._stopped),
            "label_agreement": agreement,
            "num_teachers": len(self._ensemble),
        }

    def state_dict(self) -> dict[str, Any]:
        """JSON-safe state: the ledger and the diagnostic counters."""
        return {
            "ledger": self._ledger.state_dict(),
            "agreements": self._agreements,
            "requested": self._requested,
            "stopped": self._stopped,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a :meth:`state_dict`: the spent budget is never reset."""
        self._ledger.load_state_dict(state["ledger"])
        self._agreements = int(state["agreements"])
        self._requested = int(state["requested"])
        self._stopped = bool(state["stopped"])


def create_labeler_actor(**kwargs: Any) -> Any:
    """Start a :class:`PATELabeler` as a Ray actor and wait until its teachers are loaded.

    No CPU is reserved for it: it mostly waits for EnvRunners' requests.

    Args:
        **kwargs: :class:`PATELabeler`'s arguments.

    Returns:
        The actor handle.

    Raises:
        PrivacyConfigError: As raised by the teachers' checks (e.g. a space mismatch),
            unwrapped from Ray's error types so that the user sees the message itself.

    """
    import ray

    actor = ray.remote(num_cpus=0, max_restarts=0)(PATELabeler).remote(**kwargs)
    try:
        ray.get(actor.ping.remote())
    except ray.exceptions.RayTaskError as e:
        if isinstance(e.cause, PrivacyConfigError):
            ray.kill(actor)
            raise PrivacyConfigError(str(e.cause)) from None
        raise
    return actor
