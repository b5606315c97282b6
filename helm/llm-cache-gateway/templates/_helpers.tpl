{{/*
Names. The standard Helm scaffold, so objects are named <release>-llm-cache-gateway unless the release
name already contains the chart name.
*/}}
{{- define "lcg.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "lcg.fullname" -}}
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

{{- define "lcg.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "lcg.labels" -}}
helm.sh/chart: {{ include "lcg.chart" . }}
app.kubernetes.io/name: {{ include "lcg.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: llm-cache-gateway
{{- end }}

{{/* Selector labels of the gateway pods. */}}
{{- define "lcg.gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "lcg.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: gateway
{{- end }}

{{/* Selector labels of the vLLM pods. */}}
{{- define "lcg.vllm.selectorLabels" -}}
app.kubernetes.io/name: {{ include "lcg.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: vllm
{{- end }}

{{- define "lcg.vllm.name" -}}
{{- printf "%s-vllm" (include "lcg.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The headless Service of the vLLM pool: one DNS A record per ready replica. */}}
{{- define "lcg.vllm.headlessName" -}}
{{- printf "%s-vllm-headless" (include "lcg.fullname" . | trunc 48 | trimSuffix "-") }}
{{- end }}

{{/* Selector labels, name and headless Service of the SGLang pool. */}}
{{- define "lcg.sglang.selectorLabels" -}}
app.kubernetes.io/name: {{ include "lcg.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: sglang
{{- end }}

{{- define "lcg.sglang.name" -}}
{{- printf "%s-sglang" (include "lcg.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "lcg.sglang.headlessName" -}}
{{- printf "%s-sglang-headless" (include "lcg.fullname" . | trunc 46 | trimSuffix "-") }}
{{- end }}

{{- define "lcg.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "lcg.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Image reference: a digest wins over a tag (tags can move; digests cannot).
Usage: include "lcg.image" (dict "image" .Values.image "default" .Chart.AppVersion)
*/}}
{{- define "lcg.image" -}}
{{- if .image.digest }}
{{- printf "%s@%s" .image.repository .image.digest }}
{{- else }}
{{- printf "%s:%s" .image.repository (default .default .image.tag | toString) }}
{{- end }}
{{- end }}

{{/*
Name of a bundled dependency chart's objects, computed the way the qdrant and valkey charts compute
their own "fullname" (fullnameOverride, else <release>-<chart> unless the release already contains it).
Usage: include "lcg.subchartFullname" (dict "chart" "valkey" "values" .Values.valkey "release" .Release.Name)
*/}}
{{- define "lcg.subchartFullname" -}}
{{- $v := .values | default dict }}
{{- if $v.fullnameOverride }}
{{- $v.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .chart $v.nameOverride }}
{{- if contains $name .release }}
{{- .release | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .release $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "lcg.svcDomain" -}}
{{- printf "%s.svc.%s" .Release.Namespace .Values.clusterDomain }}
{{- end }}

{{/*
Redis URL the gateway uses: stores.redis.url when set (it also overrides the bundled Valkey, e.g. a
redis+sentinel:// or redis+cluster:// URL), else the bundled Valkey's Service, else empty (the gateway's
embedded in-process store). stores.redis.urlSecret, handled by the Deployment, wins over all.
*/}}
{{- define "lcg.redisURL" -}}
{{- if .Values.stores.redis.url }}
{{- .Values.stores.redis.url }}
{{- else if .Values.valkey.enabled }}
{{- $host := printf "%s.%s" (include "lcg.subchartFullname" (dict "chart" "valkey" "values" .Values.valkey "release" .Release.Name)) (include "lcg.svcDomain" .) }}
{{- $port := 6379 }}
{{- with .Values.valkey.service }}{{ with .port }}{{ $port = . }}{{ end }}{{ end }}
{{- if .Values.stores.redis.passwordSecret.name }}
{{- /* $(VAR) is expanded by the kubelet from the env var declared just before it. */}}
{{- printf "redis://default:$(GATEWAY_REDIS_PASSWORD)@%s:%v/0" $host $port }}
{{- else }}
{{- printf "redis://%s:%v/0" $host $port }}
{{- end }}
{{- end }}
{{- end }}

{{/* Qdrant URL the gateway uses: stores.qdrant.url when set, else the bundled Qdrant's Service, else
empty (the embedded engine under GATEWAY_DATA_DIR). */}}
{{- define "lcg.qdrantURL" -}}
{{- if .Values.stores.qdrant.url }}
{{- .Values.stores.qdrant.url }}
{{- else if .Values.qdrant.enabled }}
{{- printf "http://%s.%s:6333" (include "lcg.subchartFullname" (dict "chart" "qdrant" "values" .Values.qdrant "release" .Release.Name)) (include "lcg.svcDomain" .) }}
{{- end }}
{{- end }}

{{/*
GATEWAY_VLLM_ENDPOINTS. The bundled pool is named by its headless Service in the `dns+http://` form:
the gateway re-resolves the name periodically (routing.dns_interval) and treats each A record as one
replica. External replicas (other clusters, bare-metal hosts) are appended as plain server roots.
*/}}
{{- define "lcg.vllmEndpoints" -}}
{{- $eps := list }}
{{- if .Values.vllm.enabled }}
{{- $eps = append $eps (printf "dns+http://%s.%s:%v" (include "lcg.vllm.headlessName" .) (include "lcg.svcDomain" .) .Values.vllm.port) }}
{{- end }}
{{- if .Values.sglang.enabled }}
{{- $eps = append $eps (printf "dns+http://%s.%s:%v" (include "lcg.sglang.headlessName" .) (include "lcg.svcDomain" .) .Values.sglang.port) }}
{{- end }}
{{- range .Values.vllm.extraEndpoints }}
{{- $eps = append $eps . }}
{{- end }}
{{- join "," $eps }}
{{- end }}

{{/* Pod selector of the bundled stores' pods (the labels their charts put on them). */}}
{{- define "lcg.valkey.podLabels" -}}
app.kubernetes.io/name: {{ default "valkey" .Values.valkey.nameOverride }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "lcg.qdrant.podLabels" -}}
app.kubernetes.io/name: {{ default "qdrant" .Values.qdrant.nameOverride }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* DNS egress rule, shared by the gateway's and the engines' NetworkPolicies. */}}
{{- define "lcg.np.dnsRule" -}}
- to:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: {{ .Values.networkPolicy.dns.namespace }}
      podSelector:
        matchLabels:
          {{- toYaml .Values.networkPolicy.dns.podLabels | nindent 10 }}
    {{- range .Values.networkPolicy.dns.cidrs }}
    - ipBlock:
        cidr: {{ . }}
    {{- end }}
  ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
{{- end }}

{{/*
A cloud credential's Secret reference: the one named in values, else (cloud.secret.create with the value
set) the chart's own `<fullname>-cloud` Secret. Usage: include "lcg.cloudRef" (dict "ref" REF "value" VALUE
"key" CHART_KEY "root" $) → "name/key" or "".
*/}}
{{- define "lcg.cloudRef" -}}
{{- if .ref.name -}}
{{ .ref.name }}/{{ .ref.key }}
{{- else if and .root.Values.cloud.secret.create .value -}}
{{ include "lcg.fullname" .root }}-cloud/{{ .key }}
{{- end -}}
{{- end }}

{{/* A gateway probe; with the gateway's own TLS, its httpGet speaks HTTPS. */}}
{{- define "lcg.probe" -}}
{{- $probe := deepCopy .probe -}}
{{- if and .tls $probe.httpGet -}}
{{- $_ := set $probe.httpGet "scheme" "HTTPS" -}}
{{- end -}}
{{- toYaml $probe -}}
{{- end }}
