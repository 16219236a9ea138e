{{/*
Chart name, truncated to 63 characters (the DNS label limit).
*/}}
{{- define "goldwatch.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name: the release name if it already contains the chart name, else
<release>-<chart>. It names the Service, hence the Prometheus job label.
*/}}
{{- define "goldwatch.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "goldwatch.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Common labels (app.kubernetes.io/*).
*/}}
{{- define "goldwatch.labels" -}}
helm.sh/chart: {{ include "goldwatch.chart" . }}
{{ include "goldwatch.selectorLabels" . }}
app.kubernetes.io/version: {{ (default .Chart.AppVersion .Values.image.tag) | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: goldwatch
{{- end }}

{{/*
Selector labels (immutable on a Deployment: never add to them).
*/}}
{{- define "goldwatch.selectorLabels" -}}
app.kubernetes.io/name: {{ include "goldwatch.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "goldwatch.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "goldwatch.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The Secret with the API token and the Kafka SASL credentials.
*/}}
{{- define "goldwatch.secretName" -}}
{{- default (include "goldwatch.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{- define "goldwatch.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
The API port, from the goldwatch config (8000 by default).
*/}}
{{- define "goldwatch.port" -}}
{{- $api := .Values.config.api | default dict }}
{{- $api.port | default 8000 }}
{{- end }}

{{/*
Refuse combinations that cannot work.
*/}}
{{- define "goldwatch.validate" -}}
{{- if and .Values.persistence.enabled (or (gt (int .Values.replicaCount) 1) .Values.autoscaling.enabled) }}
{{- fail "persistence.enabled keeps one SQLite state file on a ReadWriteOnce volume: use it with replicaCount 1 and autoscaling disabled (replicas use an emptyDir each)" }}
{{- end }}
{{- if and .Values.autoscaling.enabled (lt (int .Values.autoscaling.maxReplicas) (int .Values.autoscaling.minReplicas)) }}
{{- fail "autoscaling.maxReplicas must be >= autoscaling.minReplicas" }}
{{- end }}
{{- if and .Values.kafkaTls.enabled (not .Values.kafkaTls.existingSecret) }}
{{- fail "kafkaTls.enabled needs kafkaTls.existingSecret (a Secret with the CA and client files)" }}
{{- end }}
{{- end }}
