"""PPO's torch learner with LDP gradient noise: LDPPPOConfig's default learner class.

The class lives in :mod:`rllib_privacy.learners.ldp_ppo` (a lower layer), so that stock
``PPOConfig().learners(learner_class=LDPPPOTorchLearner, ...)`` keeps working without this
algorithm; it is re-exported here where RLlib's layout puts an algorithm's learner.
"""

from rllib_privacy.learners.ldp_ppo import LDPPPOTorchLearner

__all__ = ["LDPPPOTorchLearner"]
