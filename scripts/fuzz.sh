#!/usr/bin/env bash
# make fuzz and make test: fuzz each target (<package>:<Target>) for the
# given time. A failing input is written to <package>/testdata/fuzz/<Target>/
# and fails the run. A run that ends in a bare "context deadline exceeded"
# with no input written is Go's fuzz coordinator racing its own -fuzztime
# deadline (golang/go#75804, fixed in Go 1.27; this module is on 1.26), not
# a finding: it is reported and not counted as a failure.
set -uo pipefail
fuzztime=${1:?usage: scripts/fuzz.sh FUZZTIME package:Target...}
shift
failed=0
for target in "$@"; do
  pkg=${target%%:*}
  name=${target##*:}
  dir=$pkg/testdata/fuzz/$name
  before=$(ls "$dir" 2>/dev/null)
  echo "fuzz $pkg $name for $fuzztime"
  out=$(go test "$pkg" -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" 2>&1)
  rc=$?
  echo "$out"
  [ "$rc" -eq 0 ] && continue
  if [ "$(ls "$dir" 2>/dev/null)" = "$before" ] && grep -q '^    context deadline exceeded$' <<<"$out"; then
    echo "fuzz: $name ended on Go's -fuzztime race (golang/go#75804) with no failing input: not a finding"
    continue
  fi
  failed=1
done
exit "$failed"
