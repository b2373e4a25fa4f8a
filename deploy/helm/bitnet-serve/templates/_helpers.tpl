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

{{/*
tracing.* (values.yaml) checked before it is rendered into server.json and the pod's env: an
endpoint, a ratio in 0..1, includeText a boolean, "name=value" headers, and not both a header list
and a Secret (its BITNET_OTLP_HEADERS would replace the list from the file).
*/}}
{{- define "bitnet-serve.tracingChecks" -}}
{{- $t := .Values.tracing }}
{{- if not $t.otlpEndpoint }}
{{- fail "tracing.enabled needs tracing.otlpEndpoint, the collector's OTLP/HTTP base URL (deploy/otel: http://otel-collector:4318)" }}
{{- end }}
{{- if not (regexMatch "^https?://[^/?#]+(/[^?#]*)?$" $t.otlpEndpoint) }}
{{- fail (printf "tracing.otlpEndpoint: '%s' is not an http:// or https:// URL" $t.otlpEndpoint) }}
{{- end }}
{{- if hasSuffix "/v1/traces" $t.otlpEndpoint }}
{{- fail "tracing.otlpEndpoint is the base URL: the server appends /v1/traces itself" }}
{{- end }}
{{- if not (regexMatch "^[0-9]*\\.?[0-9]+([eE][-+]?[0-9]+)?$" (toString $t.sampleRatio)) }}
{{- fail (printf "tracing.sampleRatio: '%v' is not a number in 0..1" $t.sampleRatio) }}
{{- end }}
{{- if gt (float64 $t.sampleRatio) 1.0 }}
{{- fail (printf "tracing.sampleRatio: %v is above 1" $t.sampleRatio) }}
{{- end }}
{{- if not (has (toString $t.includeText) (list "true" "false" "1" "0")) }}
{{- fail (printf "tracing.includeText: '%v' is not true or false" $t.includeText) }}
{{- end }}
{{- range $t.headers }}
{{- if not (regexMatch "^[A-Za-z0-9!#$%&'*+.^_`|~-]+=" (toString .)) }}
{{- fail (printf "tracing.headers: '%s' is not name=value" .) }}
{{- end }}
{{- end }}
{{- if and $t.headers $t.headersSecret }}
{{- fail "tracing.headers and tracing.headersSecret: set one (the Secret's BITNET_OTLP_HEADERS would replace the list)" }}
{{- end }}
{{- end }}
