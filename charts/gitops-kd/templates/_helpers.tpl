{{/* Names and labels shared by the templates. Object names are fixed ("gitops-kd"), as deploy/ has them: the
controller's defaults (its Lease, its GitOpsKDSource, the admission Service and Secret, the
ServiceAccount user in --admission-user's default) name them. */}}
{{- define "gitops-kd.labels" -}}
app.kubernetes.io/name: gitops-kd
app.kubernetes.io/part-of: gitops-kd
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- define "gitops-kd.selector" -}}
app.kubernetes.io/name: gitops-kd
app.kubernetes.io/component: controller
{{- end }}

{{/* The name of the cluster-scoped objects (ClusterRole, ClusterRoleBinding, ValidatingWebhookConfiguration):
<namespace>-<release>, so two releases in one cluster, in one namespace or two, never share one. */}}
{{- define "gitops-kd.clusterName" -}}
{{ printf "%s-%s" .Release.Namespace .Release.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The ValidatingWebhookConfiguration: config.admission-config, else the cluster-scoped name. */}}
{{- define "gitops-kd.webhookConfig" -}}
{{ index .Values.config "admission-config" | default (include "gitops-kd.clusterName" .) }}
{{- end }}

{{/* The Lease (and GitOpsKDSource) name: config.lease-name. */}}
{{- define "gitops-kd.lease" -}}
{{ index .Values.config "lease-name" | default "gitops-kd" }}
{{- end }}

{{/* A config value as one environment variable value: lists joined by spaces (click splits them), a whole number
   as an integer (toString writes 4194304.0 as 4.194304e+06, which an integer flag refuses). */}}
{{- define "gitops-kd.envValue" -}}
{{- if kindIs "slice" . -}}{{ join " " . }}{{- else if and (kindIs "float64" .) (eq (float64 (int64 .)) .) -}}{{ int64 . }}{{- else -}}{{ toString . }}{{- end -}}
{{- end }}
