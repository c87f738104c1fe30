"""PPO whose learner privatizes every gradient (the privatizer mixin, ready to use)."""

from __future__ import annotations

from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner

from rllib_privacy.learners.gradient_privatizer import LDPGradientPrivatizerMixin


class LDPPPOTorchLearner(LDPGradientPrivatizerMixin, PPOTorchLearner):
    """PPOTorchLearner with LDP gradient noise on every update.

    Every noised gradient is one release in the learner's checkpointed ``LDPLedger``; the
    learner reports ``privacy/epsilon_spent``, ``privacy/delta_spent`` and
    ``privacy/releases`` under ``learners/<module_id>/`` (see ``gradient_privatizer``).

    It is the default learner of ``LDPPPO`` (``rllib_privacy.LDPPPOConfig``), which sets
    the mechanism with ``.privacy(...)`` (or YAML ``privacy_*`` keys) and copies the
    ledgers' figures to the top level of every result. On stock PPO, configure it with
    ``learner_class`` and ``learner_config_dict``::

        config.learners(
            learner_class=LDPPPOTorchLearner,
            learner_config_dict={"ldp_gradient": {"name": "laplace", "epsilon": 5.0,
                                                  "clip": 0.01}},
        )
    """
