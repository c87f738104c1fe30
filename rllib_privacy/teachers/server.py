"""The teacher as a Ray actor: ``TeacherServer`` loads its weights in its own process.

User guide: docs/components/kickstarting.md#what-it-protects.

The algorithm creates it with ``ray.remote(num_cpus=0)(TeacherServer)`` and hands the student
side only a ``TeacherClient`` of the actor, so the weights the checkpoint holds are read in the
teacher's process and never reach a process the student's learners can read.
"""

from __future__ import annotations

from typing import Any

from rllib_privacy.teachers.dirichlet_teacher import DirichletTeacher
from rllib_privacy.teachers.loading import load_teacher_module, resolve_teacher_checkpoint
from rllib_privacy.teachers.settings import TeacherSettings


class TeacherServer(DirichletTeacher):
    """``DirichletTeacher`` built inside its own process from a checkpoint path.

    Used as a Ray actor (``ray.remote(num_cpus=0)(TeacherServer)``) so the weights are
    loaded in, and never leave, the teacher's process.

    Args:
        checkpoint: Teacher checkpoint path (see ``teachers.loading``).
        settings: ``TeacherSettings.to_dict()``.
        **journals: ``journal_path``, ``owner_path``, ``owner_identity`` and ``trial``
            (see ``DirichletTeacher``).

    """

    def __init__(self, checkpoint: str, settings: dict[str, Any], **journals: Any) -> None:
        module = load_teacher_module(resolve_teacher_checkpoint(checkpoint))
        super().__init__(module, TeacherSettings.from_dict(settings), **journals)
