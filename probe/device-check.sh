#!/usr/bin/env bash
# probe/device-check.sh: gpufrag-probe on a real GPU (no network, no model
# download). Run from anywhere on a machine with an NVIDIA GPU and PyTorch:
#
#   probe/device-check.sh            # about 6 minutes, under 8
#
# It builds a small Llama-shaped model with random weights from
# probe/devcheck/tiny-llama.json (transformers' LlamaForCausalLM if it can be
# imported, else the same layers in plain torch; batch 16, 256-token prompts,
# 256 greedy decode steps with a KV cache per batch) and, in this order:
#   1. decodes for $DEVCHECK_SECONDS (50) s without the probe, then under
#      `python -m gpufrag_probe run` with the defaults (30 s interval,
#      history on with Python stacks, 20000 entries), timing every decode
#      step; in the probed process it also times _snapshot() and the pickle,
#      and counts history entries per second;
#   2. reads that run's snapshot back with `gpufrag analyze --json` and
#      checks that the replay of its trace is address-exact
#      (devices[].replay: every alloc address, segment size, segment free
#      and final block reproduced);
#   3. runs into an out-of-memory error in a probed process (1 GiB
#      allocations until one fails, uncaught, as a server dies) and checks
#      that the capture in DIR/.gpufrag-oom/ is there, that `gpufrag analyze`
#      explains it with the failed 1 GiB request, and that `gpufrag exporter`
#      on that directory exports gpufrag_ooms_total >= 1 and captures it;
#   4. decodes again with the history recorded without stacks (--no-stacks)
#      and with no history (--no-history), as the budget allows;
#   5. overhead = each probed run's mean decode step time against the
#      baseline's (target: below 1%).
# Every check prints PASS, FAIL, SKIP or INFO with its figure, then a summary
# table; the table (device-check.json), logs, analyze output and the probe's
# files (each under 16 MiB) go to $OUT when it is set.
#
# Environment: GPUFRAG (the gpufrag binary; default ./gpufrag at the
# repository root, else built with `go build` if go and its module cache are
# there), PYTHON (default python3), DEVCHECK_SECONDS, DEVCHECK_BUDGET (400:
# seconds for the runs; a run that would end past it is skipped). Exit
# status 0 when no check failed.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
py="${PYTHON:-python3}"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpufrag-devcheck.XXXXXX")"
echo "work directory: $work"

bin="${GPUFRAG:-}"
if [ -z "$bin" ] && [ -x "$repo/gpufrag" ]; then
	bin="$repo/gpufrag"
fi
if [ -z "$bin" ] && command -v go >/dev/null 2>&1; then
	echo "building gpufrag: go build -o $work/gpufrag ./cmd/gpufrag"
	if (cd "$repo" && GOPROXY=off timeout 300 go build -o "$work/gpufrag" ./cmd/gpufrag); then
		bin="$work/gpufrag"
	else
		echo "FAIL  go build of gpufrag failed (no module cache and no network?): set GPUFRAG or put a binary at $repo/gpufrag"
	fi
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
	echo "FAIL  no gpufrag binary (GPUFRAG=${GPUFRAG:-unset}; $repo/gpufrag absent; go build not possible)"
	exit 1
fi
echo "gpufrag: $bin"

if ! "$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)"; then
	echo "FAIL  $py cannot import torch with CUDA (torch.cuda.is_available() is False or torch is missing)"
	exit 1
fi
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

out=()
[ -n "${OUT:-}" ] && out=(--out "$OUT")
exec "$py" "$here/devcheck/check.py" --gpufrag "$bin" --work "$work" ${out[@]+"${out[@]}"} \
	--seconds "${DEVCHECK_SECONDS:-50}" --budget "${DEVCHECK_BUDGET:-400}"
