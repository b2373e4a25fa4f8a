{{/* Names and labels shared by every object of the chart. */}}
{{- define "bitnet-serve.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "bitnet-serve.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "bitnet-serve.selectorLabels" -}}
app.kubernetes.io/name: {{ include "bitnet-serve.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end }}

{{- define "bitnet-serve.commonLabels" -}}
app.kubernetes.io/name: {{ include "bitnet-serve.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "bitnet-serve.labels" -}}
{{ include "bitnet-serve.commonLabels" . }}
app.kubernetes.io/component: server
{{- end }}

{{- define "bitnet-serve.apiKeysSecret" -}}
{{- if .Values.apiKeys.existingSecret }}{{ .Values.apiKeys.existingSecret }}{{ else }}{{ include "bitnet-serve.fullname" . }}-api-keys{{ end }}
{{- end }}

{{- define "bitnet-serve.modelsClaim" -}}
{{- if .Values.model.persistence.existingClaim }}{{ .Values.model.persistence.existingClaim }}{{ else }}{{ include "bitnet-serve.fullname" . }}-models{{ end }}
{{- end }}

{{- define "bitnet-serve.peersService" -}}
{{ include "bitnet-serve.fullname" . | trunc 57 | trimSuffix "-" }}-peers
{{- end }}

{{/*
The Secret (kubernetes.io/tls: tls.crt, tls.key) of the HTTPS listener (https.enabled).
*/}}
{{- define "bitnet-serve.httpsSecret" -}}
{{- if .Values.https.secretName }}{{ .Values.https.secretName }}{{ else }}{{ include "bitnet-serve.fullname" . }}-https{{ end }}
{{- end }}

{{- define "bitnet-serve.clusterTlsSecret" -}}
{{- if .Values.cluster.tlsSecret }}{{ .Values.cluster.tlsSecret }}{{ else }}{{ include "bitnet-serve.fullname" . }}-cluster-tls{{ end }}
{{- end }}
