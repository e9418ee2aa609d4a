#!/usr/bin/env bash
# calib/device/device-check.sh: issue 16's GPU check. On a machine with an
# NVIDIA GPU and PyTorch (no network, no model download), from anywhere:
#
#   calib/device/device-check.sh        # about 1-3 minutes on H100/H200, under 8
#
# 1. times one layer of a random-weight Llama-3.1-8B-shaped model
#    (calib/device/steptime.py: GEMMs at 1..8192 rows, prefill attention,
#    decode attention) into $OUT/ops.json (or ./ops.json without $OUT);
#    with FP8 weights too (--dtype fp8, $OUT/ops-fp8.json) where the GPU has
#    FP8 tensor cores;
# 2. measures the GPU's sustained peaks (calib/device/peaks.py: STREAM triad,
#    bf16 and fp8 GEMMs at 8192^3) into $OUT/peaks.json, the figures
#    model/gpu.go keeps as Measured*;
# 3. when a gpufrag binary is at hand ($GPUFRAG, ./gpufrag at the repository
#    root, or `go build` when go and its module cache are there), fits the
#    GPU's profile terms to them: $OUT/ops-fit.txt, ops-fit.json and the
#    fitted profile ops-profile.yaml; without one, fit afterwards with
#      go run ./cmd/gpufrag calibrate --ops ops.json --gpu GPU
#    where GPU is $DEVCHECK_GPU (default h200-141g).
# Exit status 0 when the timings were taken (and, if a binary was found,
# fitted).
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${OUT:-.}"
py="${PYTHON:-python3}"
gpu="${DEVCHECK_GPU:-h200-141g}"
mkdir -p "$out"

echo "== steptime.py ($("$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))' 2>&1 | tail -1))"
if ! timeout 460 "$py" "$here/steptime.py" --out "$out/ops.json"; then
	echo "FAIL: steptime.py did not finish (see above)" >&2
	exit 1
fi
echo "PASS: timings in $out/ops.json"

# FP8 linear layers where the GPU has FP8 tensor cores (compute capability 8.9 on).
if "$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.get_device_capability(0) >= (8, 9) else 1)' 2>/dev/null; then
	echo "== steptime.py --dtype fp8"
	if timeout 200 "$py" "$here/steptime.py" --dtype fp8 --out "$out/ops-fp8.json"; then
		echo "PASS: FP8 timings in $out/ops-fp8.json"
	else
		echo "FAIL: steptime.py --dtype fp8 did not finish (see above); the bf16 timings stand" >&2
		rm -f "$out/ops-fp8.json"
	fi
else
	echo "SKIP: no FP8 tensor cores (compute capability below 8.9): no FP8 timings"
fi

echo "== peaks.py (triad, bf16 and fp8 GEMM 8192^3)"
if timeout 120 "$py" "$here/peaks.py" --out "$out/peaks.json"; then
	echo "PASS: sustained peaks in $out/peaks.json"
else
	echo "FAIL: peaks.py did not finish (see above); the operator timings stand" >&2
fi

bin="${GPUFRAG:-}"
if [ -z "$bin" ] && [ -x "$root/gpufrag" ]; then
	bin="$root/gpufrag"
fi
if [ -z "$bin" ] && command -v go >/dev/null 2>&1; then
	(cd "$root" && CGO_ENABLED=0 timeout 300 go build -o "$out/gpufrag" ./cmd/gpufrag) && bin="$out/gpufrag"
fi
if [ -z "$bin" ]; then
	echo "SKIP: no gpufrag binary; fit here with: go run ./cmd/gpufrag calibrate --ops ops.json --gpu $gpu"
	exit 0
fi
"$bin" calibrate --ops "$out/ops.json" --gpu "$gpu" -o "$out/ops-profile.yaml" | tee "$out/ops-fit.txt" &&
	"$bin" calibrate --ops "$out/ops.json" --gpu "$gpu" --json > "$out/ops-fit.json" &&
	echo "PASS: fitted $gpu's linear and attention terms ($out/ops-fit.txt)"
if [ -f "$out/ops-fp8.json" ]; then
	# Under vLLM on an Ada GPU the FP8 fit is refused (a kernel table's terms
	# time it there); its message says so.
	"$bin" calibrate --ops "$out/ops-fp8.json" --gpu "$gpu" | tee "$out/ops-fp8-fit.txt" &&
		echo "PASS: fitted $gpu's fp8_compute_eff_max ($out/ops-fp8-fit.txt)"
fi
