"""The drift webhook's notifier, moved to the alerts edge (gitops_kd/alerts/webhook.py); kept importable here."""

from gitops_kd.alerts.webhook import WebhookNotifier

__all__ = ["WebhookNotifier"]
