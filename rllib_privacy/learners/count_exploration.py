"""Learner mixin that owns the global count table (PPO and other on-policy algorithms)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.learner.learner import Learner
from ray.rllib.utils.annotations import override

from rllib_privacy.connectors.count_bonus import AddCountBonusToRewards

#: Learner state key of the count table (hash codes, counts, AE weights and pool).
COMPONENT_COUNT_EXPLORATION = "count_exploration"


if TYPE_CHECKING:
    # mypy checks the mixin against the class it is mixed into; at run time it is a plain mixin.
    from ray.rllib.core.learner.learner import Learner as _MixinBase
else:
    _MixinBase = object


class CountExplorationLearnerMixin(_MixinBase):
    """Prepends a ``AddCountBonusToRewards`` piece to the learner connector pipeline.

    The piece runs before RLlib's default pieces (so GAE sees r + r⁺) and is built from
    ``config.count_exploration_config`` with the module's observation space. There is one
    Learner (``num_learners`` ≤ 1, checked by the config), so its table is the one global
    table. RLlib does not checkpoint learner-connector state in RLlib 2.60: this mixin adds
    the table to ``Learner.get_state``/``set_state`` so that it is saved and restored
    with the learner (and thus the Algorithm).
    """

    count_bonus: AddCountBonusToRewards | None = None

    @override(Learner)
    def build(self) -> None:
        """Builds the learner, then inserts the bonus piece at the front of the pipeline."""
        super().build()
        spec = getattr(self.config, "count_exploration_config", None)
        if spec is None or self._learner_connector is None:
            return
        module = self.module[DEFAULT_MODULE_ID]
        self.count_bonus = AddCountBonusToRewards(
            module.observation_space, module.action_space, spec=spec
        )
        self._learner_connector.prepend(self.count_bonus)

    @override(Learner)
    def get_state(
        self, components: Any = None, *, not_components: Any = None, **kwargs: Any
    ) -> dict[str, Any]:
        """RLlib's learner state plus the count table."""
        state = super().get_state(components, not_components=not_components, **kwargs)
        if self.count_bonus is not None and self._check_component(
            COMPONENT_COUNT_EXPLORATION, components, not_components
        ):
            state[COMPONENT_COUNT_EXPLORATION] = self.count_bonus.get_state()
        return state

    @override(Learner)
    def set_state(self, state: dict[str, Any]) -> None:
        """Restores RLlib's learner state and the count table (counts never reset)."""
        super().set_state(state)
        if self.count_bonus is not None and COMPONENT_COUNT_EXPLORATION in state:
            self.count_bonus.set_state(state[COMPONENT_COUNT_EXPLORATION])
