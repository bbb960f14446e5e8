#!/usr/bin/env bash
# make dev: start kumo (unless AWS_ENDPOINT_URL points elsewhere), the dev
# server and the operator console (aijobs console, on 127.0.0.1:9090 unless
# AIJOBS_CONSOLE_LISTEN says otherwise); Ctrl-C stops everything this script
# started.
set -euo pipefail
cd "$(dirname "$0")/.."
pids=()
cleanup() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "stopped."
}
trap cleanup INT TERM EXIT

if [ -z "${AWS_ENDPOINT_URL:-}" ]; then
  export AWS_ENDPOINT_URL=http://127.0.0.1:4566
  if (exec 3<>/dev/tcp/127.0.0.1/4566) 2>/dev/null; then
    echo "something already listens on 127.0.0.1:4566; using it as the AWS endpoint"
  else
    KUMO_LOG_LEVEL=warn bin/kumo --host 127.0.0.1 --port 4566 &
    pids+=($!)
    for _ in $(seq 1 100); do
      (exec 3<>/dev/tcp/127.0.0.1/4566) 2>/dev/null && break
      sleep 0.1
    done
    echo "kumo listening on $AWS_ENDPOINT_URL"
  fi
fi
export AWS_REGION=${AWS_REGION:-us-east-1}
# The dev server's callbacks may go to receivers on this machine over http.
AIJOBS_METRICS=${AIJOBS_METRICS:-off} AIJOBS_CALLBACK_ALLOW_LOOPBACK=${AIJOBS_CALLBACK_ALLOW_LOOPBACK:-true} bin/aijobs-dev &
pids+=($!)
# The console finds the table and queues the dev server made (by
# AIJOBS_PREFIX), so it starts once the dev server answers.
listen=${AIJOBS_LISTEN:-127.0.0.1:8080}
for _ in $(seq 1 300); do
  (exec 3<>"/dev/tcp/${listen%:*}/${listen##*:}") 2>/dev/null && break
  sleep 0.1
done
bin/aijobs console --listen "${AIJOBS_CONSOLE_LISTEN:-127.0.0.1:9090}" &
pids+=($!)
wait -n "${pids[@]}"
