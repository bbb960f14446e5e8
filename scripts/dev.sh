#!/usr/bin/env bash
# make dev: start kumo (unless AWS_ENDPOINT_URL points elsewhere) and the dev
# server; Ctrl-C stops everything this script started.
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
wait -n "${pids[@]}"
