"""The kickstarting teacher as its own trust domain.

User guide: docs/components/kickstarting.md#what-it-protects.

The teacher holds its network and answers batches of observations with privatized
policies x ~ Dir(k·π̃(s)) (Gohari et al., "Privacy-Preserving Kickstarting Deep
Reinforcement Learning with Privacy-Aware Learners", §3-4). Its weights and its raw
policy π(s) never leave it: the only methods student code can call return privatized
policies, the k they were drawn with, and privacy bookkeeping.

It also owns its budget. At the start of each rollout (training iteration) k is
multiplied by the vanishing coefficient c (k_t = k₀·c^t); every answered state is one
release recorded in a ``TeacherLedger``: by default (composition ``"rdp"``) with its k and
mechanism (η, radius = (1 − mη)·L·b, m), composed as Rényi DP and converted to ε at
δ = ``delta_budget``; with ``"basic"``/``"advanced"`` at (ε(k_t), δ(k_t)) of eq. 12 and
eq. 6. The teacher stops sharing for good, and refuses every later request, once

* k_t falls below ``min_k``, or
* the rollout that starts would exceed the ε or δ budget at its expected size, or
* a request cannot be afforded in full (requests are answered all or nothing).

ε(k) of eq. 12 does not vanish as k → 0 (its lnΓ terms level off at a positive floor) and δ(k)
grows, so "k = 0" in the paper's words is implemented as "stop answering", not as answering
with a tiny k.

In a Ray job the teacher runs as an actor (``TeacherServer``, ``teachers.server``) created
by the algorithm, so that its weights stay in a process the student's learners cannot read;
tests and single-process use may hold a ``DirichletTeacher`` directly. Its settings and their
checks are ``TeacherSettings`` (``teachers.settings``), what it hands out is a
``TeacherAnswer`` (``teachers.answer``).
"""

from __future__ import annotations

import contextlib
import math
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from rllib_privacy.accounting.accountants import compose_basic
from rllib_privacy.accounting.dirichlet import dirichlet_epsilon
from rllib_privacy.accounting.events import DirichletAnswer, EpsilonDeltaRelease, PrivacyEvent
from rllib_privacy.accounting.journal import ReplayJournal
from rllib_privacy.accounting.owner_ledger import OwnerLedger
from rllib_privacy.accounting.teacher_ledger import TeacherEvent, TeacherLedger
from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.mechanisms.dirichlet import dirichlet_mechanism
from rllib_privacy.mechanisms.lipschitz import policy_lipschitz_upper_bound
from rllib_privacy.mechanisms.secure_noise import NoiseStreams
from rllib_privacy.teachers.answer import TeacherAnswer
from rllib_privacy.teachers.answer_cache import AnswerCache
from rllib_privacy.teachers.loading import load_teacher_module, resolve_teacher_checkpoint
from rllib_privacy.teachers.settings import TeacherSettings

#: Component name of the teacher's privacy journal (file ``<journal dir>/kickstart_teacher.jsonl``).
JOURNAL_COMPONENT = "kickstart_teacher"
#: ``get_state()`` keys a journal snapshot holds.
_SNAPSHOT_KEYS = (
    "ledger",
    "k",
    "rollouts",
    "sharing",
    "stopped_at_rollout",
    "answered",
    "refused",
    "requests",
    "asked",
    "cached",
    "cache",
)


class DirichletTeacher:
    """A trained policy network that answers only with Dirichlet-privatized policies.

    Args:
        module: The teacher's RLModule (discrete actions; ``forward_inference`` returns
            logits under ``action_dist_inputs``). It stays inside this object.
        settings: Mechanism and budget settings.
        journal_path: File of the write-ahead privacy journal (see
            ``rllib_privacy.utils.journaling``), or None (no journal: tests and
            single-process use). Every answer's release and
            every change of the k schedule is journaled before it takes effect; records
            already in the file are replayed, so a restart continues the spent budget.
            Ignored for mechanism ``"none"`` (nothing private is spent).
        owner_path: The data owner's ledger journal
            (``rllib_privacy.accounting.owner_ledger.OwnerLedger``), or None
            (budget scope ``trial``: this teacher's own ledger is the budget). With it,
            every release is first reserved in the owner's ledger, under its file lock, so
            every trial and run of the same teacher spends one budget.
        owner_identity: The owner's identity (``owner_identity`` of the teacher checkpoint);
            required with ``owner_path``.
        trial: Who spends (the trial's name), written beside each release in the owner's
            journal; None draws a random name.

    """

    def __init__(
        self,
        module: Any,
        settings: TeacherSettings,
        *,
        journal_path: str | None = None,
        owner_path: str | None = None,
        owner_identity: str | None = None,
        trial: str | None = None,
    ) -> None:
        import gymnasium as gym

        if not isinstance(module.action_space, gym.spaces.Discrete):
            raise PrivacyConfigError(
                "the teacher's action space must be Discrete for the Dirichlet mechanism, "
                f"got {module.action_space}"
            )
        self._module = module
        self._settings = settings
        self.num_actions = int(module.action_space.n)
        settings.check_num_actions(self.num_actions)
        self.observation_space = module.observation_space
        self.action_space = module.action_space
        self._noise_streams = NoiseStreams(settings.seed)
        self._rng = self._noise_streams.spawn()
        self._network_lipschitz = (
            float(settings.lipschitz)
            if settings.lipschitz is not None
            else _module_lipschitz(module)
        )
        self._ledger = self._new_ledger()
        self._privacy_cache: dict[float, tuple[float, float]] = {}
        self._k = float(settings.k)
        self._rollouts = 0
        self._sharing = True
        self._stopped_at_rollout: int | None = None
        self._answered = 0
        self._refused = 0
        self._requests = 0
        self._asked = 0
        self._cached = 0
        self._replayed = 0
        self._cache = (
            AnswerCache(self.observation_space, bits=settings.cache_bits)
            if settings.cache_bits
            else None
        )
        self._journal: ReplayJournal | None = None
        if journal_path is not None and settings.mechanism == "dirichlet":
            self._journal = ReplayJournal(
                journal_path,
                component=JOURNAL_COMPONENT,
                ledger=self._ledger,
                # Journals written before RDP lack the mechanism: it is this teacher's own
                # (η, radius and m are fixed for a run).
                legacy_defaults=self._mechanism(),
            )
            self._journal.replay_all(self)
        self._trial = trial or uuid.uuid4().hex
        self._owner: OwnerLedger | None = None
        if owner_path is not None and settings.mechanism == "dirichlet":
            if owner_identity is None:
                raise ValueError("owner_identity is required with owner_path")
            self._owner = OwnerLedger(
                owner_path,
                component=JOURNAL_COMPONENT,
                identity=owner_identity,
                ledger=self._new_ledger(),
            )

    @classmethod
    def from_checkpoint(
        cls, path: str, settings: TeacherSettings, **journals: Any
    ) -> DirichletTeacher:
        """Load the teacher's RLModule from a checkpoint path (see ``teachers.loading``).

        Args:
            path: The teacher checkpoint.
            settings: Mechanism and budget settings.
            **journals: ``journal_path``, ``owner_path``, ``owner_identity``, ``trial``.

        """
        module = load_teacher_module(resolve_teacher_checkpoint(path))
        return cls(module, settings, **journals)

    # ---- what the student side may call -------------------------------------------

    def spaces(self) -> tuple[Any, Any]:
        """(observation space, action space) the teacher was trained with."""
        return self.observation_space, self.action_space

    @property
    def restricted_lipschitz(self) -> float:
        """L of s ↦ π̃(s) = (1 − mη)·π(s) + η, the constant eq. 12 uses."""
        return (1.0 - self.num_actions * self._settings.eta) * self._network_lipschitz

    @property
    def radius(self) -> float:
        """L2 distance between the restricted policies of adjacent states, (1 − mη)·L·b."""
        return self.restricted_lipschitz * self._settings.adjacency

    def _mechanism(self) -> dict[str, Any]:
        """The mechanism of a release at the current k, as the ledger's RDP needs it."""
        return {
            "k": self._k,
            "eta": self._settings.eta,
            "radius": self.radius,
            "num_actions": self.num_actions,
        }

    def _release(self, count: int) -> TeacherEvent:
        """``count`` answers at the current k, as the ledger's composition records them.

        RDP composes the mechanism itself; basic and advanced composition compose Theorem 1's
        per-answer (ε, δ).
        """
        if self._settings.composition == "rdp":
            return DirichletAnswer(**self._mechanism(), count=count)
        epsilon, delta = self.release_privacy(self._k)
        return EpsilonDeltaRelease(epsilon=epsilon, delta=delta, count=count)

    def release_privacy(self, k: float) -> tuple[float, float]:
        """(ε, δ) of one answered state at concentration k (eq. 12; eq. 6 upper bound)."""
        if self._settings.mechanism == "none":
            return math.inf, 0.0
        if k not in self._privacy_cache:
            s = self._settings
            epsilon = dirichlet_epsilon(
                k=k,
                eta=s.eta,
                tau=s.tau,
                lipschitz=self.restricted_lipschitz,
                adjacency=s.adjacency,
                num_actions=self.num_actions,
            )
            delta = s.release_delta(k, self.num_actions, rollout=self._rollouts)
            self._privacy_cache[k] = (float(epsilon), float(delta))
        return self._privacy_cache[k]

    def start_rollout(self, *, expected_states: int) -> dict[str, Any]:
        """Begin a rollout: decay k and decide whether this rollout can be answered.

        Args:
            expected_states: How many states the student will ask about in this rollout
                (its train batch size); the rollout is only shared if all of them fit.

        Returns:
            ``stats()`` after the decision.

        """
        if self._rollouts > 0:
            self._k *= self._settings.vanishing_coefficient
        self._rollouts += 1
        if self._sharing and self._settings.mechanism == "dirichlet":
            if self._k < self._settings.min_k:
                self._stop()
            else:
                # With the cache a rollout needs only its new codes, at most one per state,
                # and requests are answered up to the budget: one more release must fit.
                needed = 1 if self._cache is not None else int(expected_states)
                release = self._release(needed)
                budgets = (
                    [self._ledger]
                    if self._owner is None
                    else [self._ledger, self._owner.refreshed()]
                )
                if not all(ledger.can_afford(release) for ledger in budgets):
                    self._stop()
        self._journal_schedule()
        return self.stats()

    def answer(self, observations: np.ndarray) -> TeacherAnswer:
        """Privatized policies for a batch of observations, or a refusal.

        Args:
            observations: (N, ...) observations from the student's environment.

        Returns:
            A ``TeacherAnswer``; every answered row is one release in the ledger.

        """
        observations = np.asarray(observations)
        count = int(observations.shape[0])
        self._requests += 1
        self._asked += count
        if count == 0:
            return TeacherAnswer(np.zeros((0, self.num_actions), np.float32), self._k)
        if self._cache is not None:
            return self._answer_with_cache(observations)
        if not self._sharing:
            self._refused += count
            return TeacherAnswer(None, 0.0)
        if self._settings.mechanism == "dirichlet":
            release = self._release(count)
            with self._spending() as budgets:
                affordable = all(ledger.can_afford(release) for ledger in budgets)
                if affordable:
                    self._reserve(release)
            if not affordable:
                self._stop()
                self._refused += count
                return TeacherAnswer(None, 0.0)
        policy = self._policy(observations)
        if self._settings.mechanism == "none":
            self._answered += count
            return TeacherAnswer(policy.astype(np.float32), math.inf)
        if self._journal is not None:
            # Write-ahead: the release is durable before any answer can leave this process.
            self._journal.append_release(release, k=self._k)
        privatized = self._privatize(policy)
        self._ledger.record(release)
        self._answered += count
        return TeacherAnswer(privatized, self._k)

    def _privatize(self, policy: np.ndarray) -> np.ndarray:
        """Dir(k·π̃) of each row at the current k, as float32."""
        privatized = dirichlet_mechanism(
            policy,
            k=self._k,
            eta=self._settings.eta,
            rng=self._rng,
            secure_mode=self._settings.secure_mode,
        )
        return np.asarray(privatized, dtype=np.float32)

    def _policy(self, observations: np.ndarray) -> np.ndarray:
        """π(s) of the teacher network (float64), checked finite; never leaves this object."""
        import torch

        with torch.no_grad():
            obs = torch.as_tensor(observations, dtype=torch.float32)
            logits = self._module.forward_inference({"obs": obs})["action_dist_inputs"]
            policy = torch.softmax(logits.float(), dim=-1).double().numpy()
        if not np.all(np.isfinite(policy)):
            # Checked for every mechanism: plain kickstarting would hand NaN to the student.
            raise ValueError(
                "the teacher's policy must be finite, but its network produced NaN/inf for "
                f"{int(np.sum(~np.isfinite(policy).all(axis=-1)))} of {len(policy)} states; "
                "nothing was released"
            )
        return policy

    @property
    def _serving_cache(self) -> bool:
        """Whether cached answers are served: until k falls below ``min_k``."""
        return self._k >= self._settings.min_k

    @contextlib.contextmanager
    def _spending(self) -> Iterator[list[Any]]:
        """The ledgers a release must fit, held for one check-then-reserve.

        This teacher's own ledger; in owner scope also the owner's, under its file lock
        and brought up to date with what other trials spent.
        """
        if self._owner is None:
            yield [self._ledger]
            return
        with self._owner.spending() as owner:
            yield [self._ledger, owner]

    def _reserve(self, release: TeacherEvent) -> None:
        """Journal ``release`` in the owner's ledger (inside ``_spending``; write-ahead)."""
        if self._owner is not None and release.count:
            self._owner.append([release], trial=self._trial)

    def _affordable(self, wanted: int, budgets: list[Any]) -> int:
        """The most of ``wanted`` new releases at the current k that every budget allows."""
        if self._settings.mechanism == "none":
            return wanted
        low, high = 0, wanted  # the spent ε and δ grow with the count: bisect
        while low < high:
            middle = (low + high + 1) // 2
            if all(ledger.can_afford(self._release(middle)) for ledger in budgets):
                low = middle
            else:
                high = middle - 1
        return low

    def _answer_with_cache(self, observations: np.ndarray) -> TeacherAnswer:
        """Serve cached codes for free; release each new code once, up to the budget.

        The budget limits the releases; the k schedule limits the help: once the budget is
        spent, cached codes are still served (post-processing), until k falls below
        ``min_k``. From then on nothing is served (cached answers are coarse, one per code,
        and would otherwise pull the student towards them for the rest of the run).
        """
        cache = self._cache
        assert cache is not None
        if not self._serving_cache:
            self._refused += len(observations)
            return TeacherAnswer(None, 0.0)
        codes = cache.keys(observations)
        first_row: dict[bytes, int] = {}
        for row, code in enumerate(codes):
            if code not in first_row and cache.get(code) is None:
                first_row[code] = row
        fresh = list(first_row.items()) if self._sharing else []
        if fresh:
            with self._spending() as budgets:
                affordable = self._affordable(len(fresh), budgets)
                if self._settings.mechanism == "dirichlet":
                    self._reserve(self._release(affordable))
            if affordable < len(fresh):
                self._stop()  # no more releases; this request still gets what was affordable
            fresh = fresh[:affordable]
        if fresh:
            rows = [row for _, row in fresh]
            answers = self._release_rows(observations[rows], [code for code, _ in fresh])
            for (code, _), answer in zip(fresh, answers, strict=True):
                cache.put(code, answer, self._k)
        count = len(codes)
        policies = np.zeros((count, self.num_actions), dtype=np.float32)
        ks = np.zeros(count, dtype=np.float32)
        mask = np.zeros(count, dtype=bool)
        for row, code in enumerate(codes):
            hit = cache.get(code)
            if hit is not None:
                policies[row], ks[row], mask[row] = hit[0], hit[1], True
        served = int(mask.sum())
        self._answered += len(fresh)
        self._cached += served - len(fresh)
        self._refused += count - served
        if served == 0:
            return TeacherAnswer(None, 0.0)
        return TeacherAnswer(policies, ks, mask)

    def _release_rows(self, observations: np.ndarray, codes: list[bytes]) -> np.ndarray:
        """One fresh release per row (the budget was checked), journaled with its code."""
        policy = self._policy(observations)
        if self._settings.mechanism == "none":
            return policy.astype(np.float32)
        release = self._release(len(codes))
        privatized = self._privatize(policy)
        if self._journal is not None:
            # Write-ahead: durable before the answers leave this process. The answers travel
            # with the release so that a replay restores the cache (no code is paid twice).
            self._journal.append_release(
                release,
                k=self._k,
                codes=[code.hex() for code in codes],
                answers=privatized.tolist(),
            )
        self._ledger.record(release)
        return privatized

    def stats(self) -> dict[str, float]:
        """Budget and sharing figures for metrics (no weights, no raw policies)."""
        private = self._settings.mechanism == "dirichlet"
        epsilon, delta = self.release_privacy(self._k) if private else (math.inf, 0.0)
        return {
            "k": self._k if self._sharing else 0.0,
            "rollouts": self._rollouts,
            "sharing": float(self._sharing),
            "stopped_at_rollout": (
                float(self._stopped_at_rollout) if self._stopped_at_rollout else math.nan
            ),
            "answered": self._answered,
            "refused": self._refused,
            "requests": self._requests,
            "asked": self._asked,
            "cached": self._cached,
            "cache_size": 0 if self._cache is None else len(self._cache),
            "epsilon_spent": self._ledger.epsilon_spent if private else math.inf,
            "delta_spent": self._ledger.delta_spent if private else 0.0,
            "releases": self._ledger.releases if private else self._answered,
            "epsilon_per_release": epsilon,
            "delta_per_release": delta,
            "epsilon_budget": self._settings.epsilon_budget,
            "lipschitz": self.restricted_lipschitz,
            "replayed_releases": self._replayed,
            **self._basic_equivalent(),
            **self._owner_stats(),
        }

    def _owner_stats(self) -> dict[str, float]:
        """The owner's totals (every trial and run of this teacher), or the trial's own."""
        if self._owner is None:
            return {
                "owner_scope": 0.0,
                "owner_epsilon_spent": self._ledger.epsilon_spent,
                "owner_delta_spent": self._ledger.delta_spent,
                "owner_releases": self._ledger.releases,
            }
        owner = self._owner.refreshed()
        epsilon, delta = owner.spent
        return {
            "owner_scope": 1.0,
            "owner_epsilon_spent": epsilon,
            "owner_delta_spent": delta,
            "owner_releases": owner.releases,
        }

    def _basic_equivalent(self) -> dict[str, float]:
        """(ε, δ) of the same releases under basic composition of Theorem 1's pairs.

        Reported beside the ledger's own figures under ``"rdp"`` so that runs can be compared
        with the accounting used before RDP; under ``"basic"`` it equals the ledger's.
        """
        if self._settings.mechanism != "dirichlet":
            return {"epsilon_basic": math.inf, "delta_basic": 0.0}
        events = []
        for event in self._ledger.history:
            if isinstance(event, DirichletAnswer):
                events.append((*self.release_privacy(event.k), event.count))
            elif isinstance(event, EpsilonDeltaRelease):
                events.append((event.epsilon, event.delta, event.count))
        epsilon, delta = compose_basic(events)
        return {"epsilon_basic": epsilon, "delta_basic": delta}

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore ``get_state()``; the spent budget continues, never resets.

        With a journal, the releases journaled after that state was taken (answered after the
        checkpoint, before a crash) are replayed on top of it and counted in
        ``stats()["replayed_releases"]``. A state from another journal (e.g. a checkpoint
        restored into a new run) is instead written to this journal as a snapshot, so the
        journal alone still reproduces the totals.
        """
        self._load_state(state)
        # The checkpointed model saw none of the replayed releases: the count starts from the
        # checkpoint's own (earlier crashes), not from what this process replayed at start.
        self._replayed = int(state.get("replayed_releases", 0))
        if self._journal is not None:
            self._journal.after_restore(state.get("journal"), self)

    def get_state(self) -> dict[str, Any]:
        """Checkpointable state: ledger, k schedule, counts (no weights, no noise state).

        The noise generator's state is not saved: restoring it would make a resumed run
        re-use noise it already spent on other states between the checkpoint and a crash,
        and a saved PCG64 state can be run backwards to recover earlier noise.
        """
        return {
            "settings": self._settings.to_dict(),
            "journal": None if self._journal is None else self._journal.marker(),
            "replayed_releases": self._replayed,
            "ledger": self._ledger.state_dict(),
            "k": self._k,
            "rollouts": self._rollouts,
            "sharing": self._sharing,
            "stopped_at_rollout": self._stopped_at_rollout,
            "answered": self._answered,
            "refused": self._refused,
            "requests": self._requests,
            "asked": self._asked,
            "cached": self._cached,
            "cache": None if self._cache is None else self._cache.state_dict(),
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        """Load ``get_state()`` as it is (``set_state`` adds the journal's tail)."""
        self._ledger.load_state_dict(state["ledger"])
        self._k = float(state["k"])
        self._rollouts = int(state["rollouts"])
        self._sharing = bool(state["sharing"])
        stopped = state["stopped_at_rollout"]
        self._stopped_at_rollout = None if stopped is None else int(stopped)
        self._answered = int(state["answered"])
        self._refused = int(state["refused"])
        self._requests = int(state["requests"])
        self._load_cache_state(state)
        # Fresh noise, never the checkpoint's (older checkpoints still carry an "rng" entry,
        # which is ignored on purpose).
        self._rng = self._noise_streams.spawn()

    # ---- internals ---------------------------------------------------------------

    def _load_cache_state(self, state: dict[str, Any]) -> None:
        """Counts and cached answers of a state (checkpoints before the cache have neither)."""
        self._asked = int(state.get("asked", self._answered + self._refused))
        self._cached = int(state.get("cached", 0))
        if self._cache is not None and state.get("cache") is not None:
            self._cache.load_state_dict(state["cache"])

    def _new_ledger(self) -> Any:
        return TeacherLedger(
            epsilon_budget=self._settings.epsilon_budget,
            delta_budget=self._settings.delta_budget,
            composition=self._settings.composition,
        )

    def _stop(self) -> None:
        if self._sharing:
            self._sharing = False
            self._stopped_at_rollout = self._rollouts
            self._journal_schedule()

    # ---- write-ahead journal -------------------------------------------------------

    def _journal_schedule(self) -> None:
        """Journal the k schedule and the sharing decision (they continue across restarts)."""
        if self._journal is not None:
            self._journal.append_update(
                k=self._k,
                rollouts=self._rollouts,
                sharing=self._sharing,
                stopped_at_rollout=self._stopped_at_rollout,
            )

    def _set_schedule(self, values: Mapping[str, Any]) -> None:
        self._k = float(values["k"])
        self._rollouts = int(values["rollouts"])
        self._sharing = bool(values["sharing"])
        stopped = values["stopped_at_rollout"]
        self._stopped_at_rollout = None if stopped is None else int(stopped)

    # The JournaledComponent protocol (rllib_privacy.accounting.journal):

    def journal_snapshot(self) -> dict[str, Any]:
        """The JSON-safe totals a journal snapshot holds (no weights, no noise stream)."""
        state = self.get_state()
        return {key: state[key] for key in _SNAPSHOT_KEYS}

    def load_journal_snapshot(self, state: Mapping[str, Any]) -> None:
        """Reset the ledger, the schedule and the counts to a ``journal_snapshot()``."""
        self._ledger.load_state_dict(state["ledger"])
        self._set_schedule(state)
        for counter in ("answered", "refused", "requests"):
            setattr(self, f"_{counter}", int(state[counter]))
        self._load_cache_state(dict(state))

    def apply_journal_update(self, fields: Mapping[str, Any]) -> None:
        """Apply a journaled change of the k schedule or the sharing decision."""
        self._set_schedule(fields)

    def count_replayed_release(self, event: PrivacyEvent, extras: Mapping[str, Any]) -> None:
        """Count a replayed release as answered, and put its answers back in the cache."""
        if self._cache is not None and "codes" in extras:
            self._cache.put_encoded(extras["codes"], extras["answers"], extras["k"])
        self._answered += event.count
        self._asked += event.count
        self._replayed += event.count


def _module_lipschitz(module: Any) -> float:
    """Upper bound on L of obs ↦ softmax(logits) for RLlib's default MLP modules."""
    encoder = getattr(module, "encoder", None)
    head = getattr(module, "pi", None)
    actor = getattr(encoder, "actor_encoder", None) or getattr(encoder, "encoder", None)
    if actor is None or head is None:
        raise PrivacyConfigError(
            f"cannot bound the Lipschitz constant of a {type(module).__name__} (expected "
            "RLlib's default encoder + pi head); set teacher_lipschitz explicitly"
        )
    try:
        # softmax is 1/2-Lipschitz (L2) and ignores a common shift of the logits.
        return float(policy_lipschitz_upper_bound(actor, head))
    except ValueError as e:
        raise PrivacyConfigError(f"{e}; set teacher_lipschitz explicitly") from None
