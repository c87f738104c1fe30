"""Kickstarting teachers: trust domains that answer only with privatized policies."""

from rllib_privacy.teachers.client import TeacherClient
from rllib_privacy.teachers.dirichlet_teacher import (
    JOURNAL_COMPONENT,
    TEACHER_MECHANISMS,
    DirichletTeacher,
    TeacherAnswer,
    TeacherServer,
    TeacherSettings,
)
from rllib_privacy.teachers.loading import (
    check_teacher_spaces,
    load_teacher_module,
    load_teacher_spaces,
    resolve_teacher_checkpoint,
)

__all__ = [
    "JOURNAL_COMPONENT",
    "TEACHER_MECHANISMS",
    "DirichletTeacher",
    "TeacherAnswer",
    "TeacherClient",
    "TeacherServer",
    "TeacherSettings",
    "check_teacher_spaces",
    "load_teacher_module",
    "load_teacher_spaces",
    "resolve_teacher_checkpoint",
]
