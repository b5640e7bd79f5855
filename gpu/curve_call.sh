#!/usr/bin/env bash
# The GPU work call (docs/gpu.md): check that scoring several queries a pass agrees with one at a
# time, run the budget-curve sweeps side by side within the time left, and pack their small results
# into $OUT/gpu-curve.tgz, even when the limit stops a sweep.
#
#   bash gpu/curve_call.sh [SWEEP ...]     # default gpu/pretrained_protocol_cosine_gpu.yaml
#
# Environment: OUT (where results go; required), JOBS (points at once in each sweep, default 6),
# SEQUENTIAL (1: the sweeps one after another, each with the time left, instead of side by side),
# LIMIT_S (seconds for the whole script, default 540),
# PYTHON (default python3), CHECK_MODEL (the model the check scores, default the sweep's GGUF),
# DEVICE (cuda or cpu, default cuda), CHECK_QUERIES (default 64), CHECK_ARGS (more arguments of the
# check, benchmarks/query_batch.py), OUTPUTS (the outputs folder, default outputs; the tarball's
# members are named outputs/...). tests/test_gpu_curve.py runs it on a CPU at toy scale.
set -uo pipefail
[ $# -gt 0 ] || set -- gpu/pretrained_protocol_cosine_gpu.yaml
JOBS=${JOBS:-6}
: "${OUT:?set OUT to the folder the results go to}"
LIMIT_S=${LIMIT_S:-540}
PYTHON=${PYTHON:-python3}
CHECK_MODEL=${CHECK_MODEL:-/tmp/kit/SmolLM2-135M-Instruct.Q4_1.gguf}
DEVICE=${DEVICE:-cuda}
CHECK_QUERIES=${CHECK_QUERIES:-64}
CHECK_ARGS=${CHECK_ARGS:-}
OUTPUTS=${OUTPUTS:-outputs}
PACK_S=15 # kept for packing the results
for sweep in "$@"; do
  [ -f "$sweep" ] || { echo "curve_call: no sweep file $sweep" >&2; exit 2; }
done
start=$SECONDS

# 1. 32 queries a pass against one (it also converts the GGUF into the model cache the sweep loads).
timeout -k 5 120 "$PYTHON" benchmarks/query_batch.py --model "$CHECK_MODEL" --device "$DEVICE" \
  --queries "$CHECK_QUERIES" --groups 1 32 --reps 1 $CHECK_ARGS --json "$OUT/query-batch.json" 2>&1 | tee "$OUT/query-batch.log"
sweeps=("$@")
if ! "$PYTHON" -c "import json, sys; sys.exit(0 if json.load(open('$OUT/query-batch.json'))['agree'] else 1)"; then
  for i in "${!sweeps[@]}"; do
    one="${sweeps[$i]%.yaml}_one_query.yaml" # the same points, one query a pass
    sed 's/^\(  query_batch:\).*/\1 1/' "${sweeps[$i]}" >"$one"
    echo "curve_call: batched scores disagree with one query a pass (or the check failed): running $one" | tee -a "$OUT/sweep.log"
    sweeps[$i]=$one
  done
fi

# 2. The sweeps side by side, stopped where the time left runs out (finished points keep their
# results; a stopped run keeps the points it scored).
left=$((LIMIT_S - (SECONDS - start) - PACK_S))
how=$([ "${SEQUENTIAL:-0}" = 1 ] && echo "one after another" || echo "side by side")
echo "curve_call: ${left} s for the sweeps ${sweeps[*]} ($how), $JOBS points at once in each" | tee -a "$OUT/sweep.log"
for sweep in "${sweeps[@]}"; do
  left=$((LIMIT_S - (SECONDS - start) - PACK_S))
  (
    timeout -k 10 "$left" "$PYTHON" -m arrank.workbook.sweep "$sweep" --jobs "$JOBS" --outputs-root "$OUTPUTS" 2>&1
    echo "curve_call: sweep $sweep exit $? after $((SECONDS - start)) s"
  ) | tee -a "$OUT/sweep.log" &
  [ "${SEQUENTIAL:-0}" = 1 ] && wait
done
wait

# 3. Small results only: per-query CSVs, results.json, logs, the points of runs the limit stopped
# (.curve-*); no weights, figures or checkpoints.
tar czf "$OUT/gpu-curve.tgz" --exclude=model --exclude='checkpoint*' --exclude='.checkpoints-*' \
  --exclude='*.lock' --exclude='*.js' --exclude='*.html' --exclude='*.png' --exclude='*.ipynb' \
  --transform 's,^[^/]*/,outputs/,' -C "$(dirname "$OUTPUTS")" "$(basename "$OUTPUTS")/05_train" "$(basename "$OUTPUTS")/sweeps"
echo "curve_call: packed $OUT/gpu-curve.tgz after $((SECONDS - start)) s"
