"""Render: the pod-template fields and Service ports gitops-kd owns, from Git, and how to patch them in (pure)."""

from gitops_kd.constants import APP_VERSION_ANNOTATION
from gitops_kd.render.compare import owned_differences, owned_fields_equal, template_patch
from gitops_kd.render.init_script import INIT_SCRIPT, dirs_env
from gitops_kd.render.template import (
    container_ports,
    dir_actions,
    has_storage,
    owned_template,
    service_ports,
)

__all__ = [
    "APP_VERSION_ANNOTATION",
    "INIT_SCRIPT",
    "container_ports",
    "dir_actions",
    "dirs_env",
    "has_storage",
    "owned_differences",
    "owned_fields_equal",
    "owned_template",
    "service_ports",
    "template_patch",
]
