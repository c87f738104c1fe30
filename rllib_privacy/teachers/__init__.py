"""Kickstarting teachers: trust domains that answer only with privatized policies."""

from rllib_privacy.teachers.answer import TeacherAnswer
from rllib_privacy.teachers.client import TeacherClient
from rllib_privacy.teachers.dirichlet_teacher import JOURNAL_COMPONENT, DirichletTeacher
from rllib_privacy.teachers.loading import (
    check_teacher_spaces,
    load_teacher_module,
    load_teacher_spaces,
    resolve_teacher_checkpoint,
)
from rllib_privacy.teachers.server import TeacherServer
from rllib_privacy.teachers.settings import TEACHER_MECHANISMS, TeacherSettings

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
