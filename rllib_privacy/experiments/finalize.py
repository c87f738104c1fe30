"""Stage 5, finalize: the checked draft frozen into the Experiment ``rllib train`` runs."""

from __future__ import annotations

from rllib_privacy.experiments.spec import Experiment, ExperimentDraft

__all__ = ["finalize_experiment"]


def finalize_experiment(draft: ExperimentDraft) -> Experiment:
    """Freeze a validated draft.

    Args:
        draft: The experiment after the validate stage.

    Returns:
        The experiment, ready for ``tune.Tuner``.

    """
    return Experiment(
        name=draft.name,
        run=draft.spec["run"],
        param_space=draft.config,
        gpu_param_space=draft.gpu_config,
        stop=draft.stop,
        checkpoint_config=draft.checkpoint_config,
        num_samples=draft.num_samples,
        storage_path=draft.storage_path,
        num_variants=draft.num_variants,
        class_path_envs=draft.class_path_envs,
    )
