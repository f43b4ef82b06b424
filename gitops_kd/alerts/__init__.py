"""Alerts edge: one Alert model fed by drift, stalls, refused commits and Git health, sent to registered channels."""

from gitops_kd.alerts.hub import AlertHub
from gitops_kd.alerts.model import SEVERITIES, SOURCES, Alert
from gitops_kd.alerts.registry import CHANNELS, make_channel

__all__ = ["CHANNELS", "SEVERITIES", "SOURCES", "Alert", "AlertHub", "make_channel"]
