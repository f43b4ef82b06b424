"""Names Kubernetes itself defines that both sides use: patch content types, well-known labels, apimachinery's alphabet."""

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"  # apps/v1 StatefulSetPodNameLabel: the StatefulSet controller sets it
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery util/rand: generated name suffixes, hash encodings
NORMAL, WARNING = "Normal", "Warning"  # core/v1 Event types
