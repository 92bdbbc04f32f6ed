#!/usr/bin/env bash
# A CI gate: stop the pipeline until someone approves the deploy in Slack.
#
#   RELAY_URL=https://relay.internal RELAY_TOKEN=… bash examples/ci_gate.sh 1.4.0
#
# `relay ask --approve Deploy` exits 0 only when "Deploy" was chosen; 1 for any other
# answer; 3 when nobody answered in time; 4 withdrawn; 5 the relay could not be reached.
set -uo pipefail
VERSION=${1:-1.4.0}
RELAY=${RELAY:-relay}   # or .venv/bin/relay

answer=$("$RELAY" ask \
  --header "Deploy gate" \
  --question "Deploy release $VERSION to production?" \
  --option Deploy --option Hold \
  --detail "Pipeline ${CI_PIPELINE_ID:-local}: all checks passed." \
  --timeout "${GATE_TIMEOUT:-1800}" \
  --approve Deploy)
code=$?
case $code in
  0) echo "approved: deploying $VERSION" ;;
  1) echo "not approved: $answer"; exit 1 ;;
  3) echo "nobody answered in time: not deploying"; exit 1 ;;
  *) echo "the gate failed (exit $code): not deploying"; exit "$code" ;;
esac
