#!/usr/bin/env bash
# Run a `lifecycle check` as N shards in parallel processes, then judge
# their union with `lifecycle merge`.
#
#   scripts/shards.sh N [CHECK ARGS...]
#   scripts/shards.sh 4 --checker sim-dfs --scenario dispose-mid-turn
#
# Each shard runs `check CHECK-ARGS --shard k/N --json` in a process group of
# its own, writing its JSON lines to a directory; on exit, Ctrl-C or TERM
# every shard still running is killed with its whole group. Then `merge`
# prints the table of the union and the script exits with merge's code
# (0 pass, 1 violation, unreached goal or missed view, 2 bad input); if a
# shard fails to run (exit 2 or a signal), the script prints that shard's
# stderr and exits with its code. A shard that found a violation (exit 1)
# is still merged: the union reports it.
#
# Environment:
#   LIFECYCLE    the binary (default: target/release/lifecycle, built by
#                `cargo build --release`)
#   SHARDS_DIR   keep the shards' files here (default: a temporary
#                directory, removed at exit); `merge` extra arguments such
#                as --json go in MERGE_ARGS
set -euo pipefail

usage() {
  echo "usage: $0 N [check args...]   (N >= 1 shards)" >&2
  exit 2
}

[[ $# -ge 1 && $1 =~ ^[1-9][0-9]*$ ]] || usage
n=$1
shift
bin=${LIFECYCLE:-target/release/lifecycle}
if [[ ! -x $bin ]]; then
  echo "error: $bin is not an executable (build it, or set LIFECYCLE)" >&2
  exit 2
fi

if [[ -n ${SHARDS_DIR:-} ]]; then
  dir=$SHARDS_DIR
  mkdir -p "$dir"
  keep=1
else
  dir=$(mktemp -d "${TMPDIR:-/tmp}/lifecycle-shards.XXXXXX")
  keep=0
fi

# Job control: every background job gets a process group of its own, led by
# the pid `$!` names.
set -m
pids=()

cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    kill -TERM -- "-$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  if [[ $keep == 0 ]]; then
    rm -rf -- "$dir"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for ((k = 1; k <= n; k++)); do
  "$bin" check "$@" --shard "$k/$n" --json --no-progress \
    >"$dir/shard-$k.jsonl" 2>"$dir/shard-$k.err" &
  pids+=("$!")
done

status=0
for ((k = 1; k <= n; k++)); do
  code=0
  wait "${pids[k - 1]}" || code=$?
  # 0 pass, 1 a violation (the union reports it): merge them; else stop.
  if [[ $code -gt 1 ]]; then
    echo "error: shard $k/$n exited $code:" >&2
    cat "$dir/shard-$k.err" >&2
    [[ $status -ne 0 ]] || status=$code
  fi
done
pids=()
if [[ $status -ne 0 ]]; then
  exit "$status"
fi

files=()
for ((k = 1; k <= n; k++)); do
  files+=("$dir/shard-$k.jsonl")
done
code=0
# shellcheck disable=SC2086 # MERGE_ARGS is a list of words
"$bin" merge ${MERGE_ARGS:-} "${files[@]}" || code=$?
exit "$code"
