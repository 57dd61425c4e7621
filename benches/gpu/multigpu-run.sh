#!/usr/bin/env bash
# Issue 31 on a multi-GPU machine (nvidia-h200-x2 or -x4), from the repository root, after
#   PACK_TESTS="gpu_devices" bash benches/gpu/pack.sh
# here (carry [".gpu"]):
#   bash benches/gpu/multigpu-run.sh [PART...]    (PARTs in order; default: test single multi compare)
#   test     the 2-GPU runtime tests (.gpu/tests/gpu_devices-*: a tensor of one device refused
#            on another, both devices launching at once at their own speed, a graph each)
#   single   `tilekit tune --all` on device 0 into a fresh tuning cache and a fresh CUBIN
#            cache, timed
#   multi    the same with `--devices all` (a worker per GPU) into other fresh caches, timed
#   compare  both caches exported; winners compared problem by problem; each problem whose
#            winners differ re-timed side by side on device 0 (`tilekit bench --config A
#            --config B`, interleaved) and the ratio printed (target: within 2%)
# Env: SHARD=I/N tunes only that deterministic part of the problems in both runs (the same
# part: a smaller comparison when device time is short); TUNE_TIMEOUT seconds per tune run
# (default 560); MAX_RETIME differing problems re-timed at most (default 12).
# State between calls lives in /tmp/multigpu (kept while the machine stays warm: the parts
# may run in separate calls); what comes back is under $OUT (six files at most):
# multigpu.log, single.json, multi.json (the runs' `--out` reports, written when a run
# finishes: a run killed by TUNE_TIMEOUT leaves none, so size SHARD to the time),
# single-export.json, multi-export.json, retime.json.
set -u
shopt -s nullglob
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TILEKIT_CUDA_ROOT=/usr/local/cuda CUDA_CACHE_DISABLE=1
TK=$PWD/.gpu/bin/tilekit
S=/tmp/multigpu
mkdir -p "$S"
LOG=$OUT/multigpu.log
SUBSET=()
[[ -n "${SHARD:-}" ]] && SUBSET=(--shard "$SHARD")
TUNE_TIMEOUT=${TUNE_TIMEOUT:-560}

log() { echo "$*" | tee -a "$LOG"; }

# tune_run NAME ARGS...: `tune --all` into fresh caches $S/NAME.sled and $S/cubin-NAME, timed.
tune_run() {
  local name=$1 s e rc
  shift
  rm -rf "$S/$name.sled" "$S/$name.json" "$S/$name.journal" "$S/cubin-$name" "$S/$name-export.json" "$S/$name-report.json"
  log "== $name: tilekit tune --all ${SUBSET[*]} $*"
  s=$(date +%s.%N)
  TILEKIT_TUNE_CACHE=$S/$name.sled TILEKIT_CACHE_DIR=$S/cubin-$name \
    timeout "$TUNE_TIMEOUT" "$TK" tune --all "${SUBSET[@]}" "$@" --out "$S/$name-report.json" \
    > "$S/$name.log" 2>&1
  rc=$?
  e=$(date +%s.%N)
  grep -E "problems on|^shard|winner|skip|tuned, |FAILED|error" "$S/$name.log" >> "$LOG"
  awk "BEGIN { printf \"%.1f\", $e - $s }" > "$S/$name.wall"
  log "$name: wall $(cat "$S/$name.wall") s, rc $rc"
  TILEKIT_TUNE_CACHE=$S/$name.sled "$TK" cache export "$S/$name-export.json" >> "$LOG" 2>&1
  cp "$S/$name-report.json" "$OUT/$name.json"
  cp "$S/$name-export.json" "$OUT/$name-export.json"
}

parts=("$@")
[[ ${#parts[@]} -eq 0 ]] && parts=(test single multi compare)
for part in "${parts[@]}"; do
  case $part in
  test)
    log "== $(date -u +%FT%TZ) $(nvidia-smi -L | tr '\n' ';')"
    "$TK" devices >> "$LOG" 2>&1
    export TILEKIT_CACHE_DIR=$S/cubin-tests
    for b in .gpu/tests/gpu_devices-*; do
      timeout 300 "$b" --ignored --test-threads=1 --nocapture 2>&1 \
        | grep -E "^test |test result|devices:|SKIPPED|panicked|assert" | tee -a "$LOG"
    done
    ;;
  single)
    tune_run single --device 0
    ;;
  multi)
    tune_run multi --devices all
    ;;
  compare)
    n=$(nvidia-smi -L | wc -l)
    if [[ -f $S/single.wall && -f $S/multi.wall ]]; then
      log "wall: 1 GPU $(cat "$S/single.wall") s, $n GPUs $(cat "$S/multi.wall") s: $(awk \
        "BEGIN { printf \"ratio %.3f (target <= %.3f, resolve <= %.3f)\", $(cat "$S/multi.wall") / $(cat "$S/single.wall"), 1.15 / $n, 1.3 / $n }")"
    fi
    python3 benches/gpu/multigpu_compare.py diff "$S/single-report.json" "$S/multi-report.json" \
      "$S/single-export.json" > "$S/diff.txt" 2>&1
    grep -v "^RETIME" "$S/diff.txt" | tee -a "$LOG"
    rm -f "$S"/retime-*.json*
    i=0
    grep "^RETIME" "$S/diff.txt" | head -n "${MAX_RETIME:-12}" \
      | while IFS=$'\t' read -r _ kernel shape dtype scalars a b; do
        i=$((i + 1))
        args=(--kernel "$kernel" --shape "$shape" --dtype "$dtype" --config "$a" --config "$b" --json --rounds 30 --device 0)
        [[ $scalars != - ]] && for sc in ${scalars//,/ }; do args+=(--scalar "$sc"); done
        printf '%s\t%s\n' "$a" "$b" > "$S/retime-$i.json.cfg"
        TILEKIT_TUNE_CACHE=$S/single.sled TILEKIT_CACHE_DIR=$S/cubin-single \
          timeout 120 "$TK" bench "${args[@]}" > "$S/retime-$i.json" 2>> "$LOG"
      done
    python3 benches/gpu/multigpu_compare.py summary "$OUT/retime.json" "$S"/retime-*.json 2>&1 | tee -a "$LOG"
    ;;
  *)
    log "unknown part $part (test, single, multi, compare)"
    ;;
  esac
done
