{{/*
The pod of bitnet-server, shared by the Deployment and (cluster.enabled) the StatefulSet; sizing,
probes and drain arithmetic are explained in deploy/k8s/base/deployment.yaml. Written at the
indentation of a workload's spec.template: include it at column 0 right after "template:".
*/}}
{{- define "bitnet-serve.podTemplate" }}
{{- $grace := add .Values.drain.preStopSleepSeconds .Values.drain.timeoutSeconds .Values.drain.marginSeconds }}
    metadata:
      labels:
        {{- include "bitnet-serve.selectorLabels" . | nindent 8 }}
      annotations:
        # Roll the pods when the configuration changes.
        checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
        prometheus.io/port: {{ .Values.port | quote }}
        {{- if .Values.https.enabled }}
        prometheus.io/scheme: https
        {{- end }}
        {{- with .Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "bitnet-serve.fullname" . }}
      automountServiceAccountToken: false
      # preStop sleep + drain timeout + margin: SIGKILL never cuts a drain short.
      terminationGracePeriodSeconds: {{ $grace }}
      {{- with .Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        runAsNonRoot: true
        runAsUser: 10001
        runAsGroup: 10001
        fsGroup: 10001
        seccompProfile:
          type: RuntimeDefault
      {{- $nodeSelector := .Values.nodeSelector }}
      {{- if .Values.cuda.enabled }}
      {{- $nodeSelector = merge (deepCopy .Values.nodeSelector) .Values.cuda.nodeSelector }}
      {{- end }}
      {{- with $nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- $tolerations := .Values.tolerations }}
      {{- if .Values.cuda.enabled }}
      {{- $tolerations = concat .Values.tolerations .Values.cuda.tolerations }}
      {{- end }}
      {{- with $tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: bitnet-server
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          args: ["--config", "/etc/bitnet-serve/server.json"]
          ports:
            - name: http
              containerPort: {{ .Values.port }}
              protocol: TCP
            {{- if .Values.cluster.enabled }}
            - name: cluster
              containerPort: {{ .Values.cluster.port }}
              protocol: TCP
            {{- end }}
          env:
            - name: BITNET_PORT
              value: {{ .Values.port | quote }}
            - name: BITNET_MODEL
              value: {{ printf "%s=/models/%s" .Values.model.alias .Values.model.file | quote }}
            - name: BITNET_DRAIN_TIMEOUT_MS
              value: {{ mul .Values.drain.timeoutSeconds 1000 | quote }}
            - name: BITNET_API_KEYS
              valueFrom:
                secretKeyRef:
                  name: {{ include "bitnet-serve.apiKeysSecret" . }}
                  key: api_keys
                  optional: true
            - name: BITNET_ADMIN_API_KEYS
              valueFrom:
                secretKeyRef:
                  name: {{ include "bitnet-serve.apiKeysSecret" . }}
                  key: admin_api_key
                  optional: true
            {{- if .Values.cluster.enabled }}
            {{- include "bitnet-serve.clusterEnv" . | nindent 12 }}
            {{- end }}
            {{- if .Values.https.enabled }}
            - name: BITNET_TLS_CERT
              value: /etc/bitnet-serve-https/tls.crt
            - name: BITNET_TLS_KEY
              value: /etc/bitnet-serve-https/tls.key
            {{- end }}
            {{- if and .Values.tracing.enabled .Values.tracing.headersSecret }}
            # The export requests' headers (credentials) from a Secret: "name=value[,name=value]".
            - name: BITNET_OTLP_HEADERS
              valueFrom:
                secretKeyRef:
                  name: {{ .Values.tracing.headersSecret }}
                  key: {{ .Values.tracing.headersSecretKey }}
            {{- end }}
          resources:
            requests:
              {{- toYaml .Values.resources.requests | nindent 14 }}
            limits:
              {{- toYaml .Values.resources.limits | nindent 14 }}
              {{- if .Values.cuda.enabled }}
              nvidia.com/gpu: {{ .Values.cuda.gpus }}
              {{- end }}
          startupProbe:
            httpGet:
              path: /health/ready
              port: http
              {{- if .Values.https.enabled }}
              scheme: HTTPS
              {{- end }}
            periodSeconds: {{ .Values.probes.startup.periodSeconds }}
            timeoutSeconds: 3
            failureThreshold: {{ .Values.probes.startup.failureThreshold }}
          livenessProbe:
            httpGet:
              path: /health/live
              port: http
              {{- if .Values.https.enabled }}
              scheme: HTTPS
              {{- end }}
            periodSeconds: {{ .Values.probes.liveness.periodSeconds }}
            timeoutSeconds: 3
            failureThreshold: {{ .Values.probes.liveness.failureThreshold }}
          readinessProbe:
            httpGet:
              path: /health/ready
              port: http
              {{- if .Values.https.enabled }}
              scheme: HTTPS
              {{- end }}
            periodSeconds: {{ .Values.probes.readiness.periodSeconds }}
            timeoutSeconds: 3
            failureThreshold: {{ .Values.probes.readiness.failureThreshold }}
            successThreshold: 1
          lifecycle:
            preStop:
              exec:
                command: ["sleep", {{ .Values.drain.preStopSleepSeconds | quote }}]
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            privileged: false
            capabilities:
              drop: ["ALL"]
          volumeMounts:
            - name: config
              mountPath: /etc/bitnet-serve
              readOnly: true
            - name: models
              mountPath: /models
              readOnly: true
            - name: cache
              mountPath: /var/cache/bitnet-serve
            - name: tmp
              mountPath: /tmp
            {{- if .Values.cluster.enabled }}
            - name: cluster-tls
              mountPath: /etc/bitnet-serve-tls
              readOnly: true
            {{- end }}
            {{- if .Values.https.enabled }}
            - name: https-tls
              mountPath: /etc/bitnet-serve-https
              readOnly: true
            {{- end }}
      volumes:
        - name: config
          configMap:
            name: {{ include "bitnet-serve.fullname" . }}-config
        - name: models
          {{- if eq .Values.model.persistence.type "hostPath" }}
          hostPath:
            path: {{ .Values.model.persistence.hostPath }}
            type: Directory
          {{- else if eq .Values.model.persistence.type "pvc" }}
          persistentVolumeClaim:
            claimName: {{ include "bitnet-serve.modelsClaim" . }}
            readOnly: true
          {{- else }}
          {{- fail "model.persistence.type must be pvc or hostPath" }}
          {{- end }}
        - name: cache
          emptyDir:
            sizeLimit: 1Gi
        - name: tmp
          emptyDir:
            medium: Memory
            sizeLimit: 64Mi
        {{- if and .Values.cluster.enabled .Values.cluster.certManager.perPod }}
        {{- $cm := .Values.cluster.certManager }}
        {{- if not $cm.enabled }}
        {{- fail "cluster.certManager.perPod needs cluster.certManager.enabled and its issuerRef" }}
        {{- end }}
        {{- if not $cm.issuerRef.name }}
        {{- fail "cluster.certManager.issuerRef.name must name a cert-manager Issuer or ClusterIssuer" }}
        {{- end }}
        # This pod's own key and certificate, issued by cert-manager's CSI driver when the pod
        # starts (tls.crt, tls.key, ca.crt): its name in the common name and in its peer DNS name.
        - name: cluster-tls
          csi:
            driver: csi.cert-manager.io
            readOnly: true
            volumeAttributes:
              csi.cert-manager.io/issuer-name: {{ $cm.issuerRef.name | quote }}
              csi.cert-manager.io/issuer-kind: {{ $cm.issuerRef.kind | quote }}
              csi.cert-manager.io/issuer-group: {{ $cm.issuerRef.group | quote }}
              csi.cert-manager.io/common-name: "${POD_NAME}"
              csi.cert-manager.io/dns-names: "${POD_NAME}.{{ include "bitnet-serve.peersService" . }}.${POD_NAMESPACE}.svc.cluster.local"
              csi.cert-manager.io/key-usages: "server auth,client auth,digital signature,key encipherment"
              csi.cert-manager.io/uri-sans: {{ include "bitnet-serve.roleUris" . | quote }}
              csi.cert-manager.io/duration: {{ $cm.duration | quote }}
              csi.cert-manager.io/renew-before: {{ $cm.renewBefore | quote }}
              csi.cert-manager.io/fs-group: "10001"
        {{- else if .Values.cluster.enabled }}
        - name: cluster-tls
          secret:
            secretName: {{ include "bitnet-serve.clusterTlsSecret" . }}
            # 0440: readable by the server's group (fsGroup), not by others.
            defaultMode: 288
        {{- end }}
        {{- if .Values.https.enabled }}
        - name: https-tls
          secret:
            secretName: {{ include "bitnet-serve.httpsSecret" . }}
            # 0440: readable by the server's group (fsGroup), not by others.
            defaultMode: 288
        {{- end }}
{{- end }}

{{/*
The cluster's environment (conf/README.md, "Cluster keys"): the pod name as node name, the peer
listener on every interface, every pod of the StatefulSet as a peer to join (itself included: a
node skips its own address), and the TLS files of the mounted Secret.
*/}}
{{- define "bitnet-serve.clusterEnv" -}}
{{- $fullname := include "bitnet-serve.fullname" . -}}
{{- $peers := list -}}
{{- range $i := until (int .Values.cluster.replicas) -}}
{{- $peers = append $peers (printf "%s-%d.%s-peers.$(POD_NAMESPACE).svc.cluster.local:%d" $fullname $i $fullname (int $.Values.cluster.port)) -}}
{{- end -}}
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: BITNET_NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: BITNET_CLUSTER_LISTEN
  value: {{ printf "0.0.0.0:%d" (int .Values.cluster.port) | quote }}
- name: BITNET_CLUSTER_JOIN
  value: {{ join "," $peers | quote }}
- name: BITNET_CLUSTER_CERT
  value: /etc/bitnet-serve-tls/tls.crt
- name: BITNET_CLUSTER_KEY
  value: /etc/bitnet-serve-tls/tls.key
- name: BITNET_CLUSTER_CA
  value: /etc/bitnet-serve-tls/ca.crt
- name: BITNET_CLUSTER_FAILURE_TIMEOUT_MS
  value: {{ .Values.cluster.failureTimeoutMs | quote }}
{{- if not .Values.cluster.certManager.perPod }}
# One certificate shared by every pod cannot name each of them: peers' names are not bound to it
# (README, "Scaling out"); certManager.perPod binds each pod's name to its own certificate.
- name: BITNET_CLUSTER_SHARED_CERTIFICATE
  value: "1"
{{- end }}
{{- end }}

{{/*
The cluster roles every pod's certificate carries (cluster.roles), as the URI subjectAltNames
peers read them from (README, "Scaling out"): comma-separated.
*/}}
{{- define "bitnet-serve.roleUris" -}}
{{- $uris := list -}}
{{- range .Values.cluster.roles -}}
{{- if not (has . (list "replica" "router" "admin")) -}}
{{- fail (printf "cluster.roles: '%s' is not a role (replica, router, admin)" .) -}}
{{- end -}}
{{- $uris = append $uris (printf "urn:bitnet-serve:role:%s" .) -}}
{{- end -}}
{{- join "," $uris -}}
{{- end }}
