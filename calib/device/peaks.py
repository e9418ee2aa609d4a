#!/usr/bin/env python3
"""Measure a GPU's sustained peaks, the figures model/gpu.go keeps as Measured*.

Three microbenchmarks, each the median of --reps runs timed with CUDA events
after warm-up (the clocks ramp up in the warm-up):

  triad  a = b + s*c over three float32 arrays of --triad-mib MiB each
         (STREAM's triad; bytes counted: two read, one written), the figure
         model/gpu.go takes as MeasuredMemBandwidth
  bf16   an 8192 x 8192 x 8192 bf16 matrix product (torch.matmul, random
         data), MeasuredBF16FLOPS
  fp8    the same in float8_e4m3fn through torch._scaled_mm (cuBLASLt), with
         and without fast accumulation, MeasuredFP8FLOPS; skipped, and said
         so, where the GPU or torch has no FP8 matrix product

It writes one JSON document (schema gpufrag-peaks/1) to --out (default:
standard output); under a minute on an H100/H200. Only the standard library
and torch are used; --dry-run prints the plan without importing torch.

  python3 calib/device/peaks.py --out peaks.json
"""

import argparse
import os
import statistics
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from steptime import header, timings, write  # noqa: E402 (the same CUDA-event timing as the operator timings)

SCHEMA = "gpufrag-peaks/1"


def timed(torch, fn, reps, warmup):
    """Median, fastest and slowest milliseconds of fn() over reps runs."""
    ms = timings(torch, fn, reps, warmup)
    return statistics.median(ms), min(ms), max(ms)


def plan(args):
    return {"schema": SCHEMA, "triad_mib": args.triad_mib, "gemm_n": args.n, "reps": args.reps,
            "points": ["triad", "bf16", "fp8", "fp8_fast_accum"]}


def measure(args):
    import torch  # noqa: PLC0415 (imported here so --dry-run needs no torch)

    dev = torch.device("cuda")
    torch.manual_seed(0)
    doc = header(torch, dev, SCHEMA, args.reps)
    doc.update({"multiprocessors": torch.cuda.get_device_properties(dev).multi_processor_count, "results": [], "skipped": []})

    def add(name, ms, unit_per_ms, unit, detail):
        med, lo, hi = ms
        doc["results"].append({"name": name, "ms_median": med, "ms_min": lo, "ms_max": hi,
                               unit: unit_per_ms / med * 1e3, "detail": detail})

    n_el = args.triad_mib * 1024 * 1024 // 4
    a = torch.empty(n_el, device=dev, dtype=torch.float32)
    b = torch.rand(n_el, device=dev, dtype=torch.float32)
    c = torch.rand(n_el, device=dev, dtype=torch.float32)
    ms = timed(torch, lambda: torch.add(b, c, alpha=0.4, out=a), args.reps, 10)
    add("triad", ms, 3 * n_el * 4, "bytes_per_s", f"float32, 3 x {args.triad_mib} MiB, torch.add(b, c, alpha=0.4, out=a)")
    del a, b, c
    torch.cuda.empty_cache()

    n = args.n
    flops = 2 * n ** 3
    x = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    y = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    ms = timed(torch, lambda: torch.matmul(x, y), args.reps, 20)
    add("bf16", ms, flops, "flops_per_s", f"torch.matmul, {n}^3, randn")
    del x, y
    torch.cuda.empty_cache()

    f8 = getattr(torch, "float8_e4m3fn", None)
    if f8 is None or not hasattr(torch, "_scaled_mm"):
        doc["skipped"].append({"op": "fp8", "why": "this torch has no float8_e4m3fn or _scaled_mm"})
        return doc
    try:
        x = (torch.randn(n, n, device=dev) * 0.5).to(f8)
        y = (torch.randn(n, n, device=dev) * 0.5).to(f8)  # row-major (n, k); y.t() is the column-major mat2
        one = torch.ones((), device=dev, dtype=torch.float32)
        for name, fast in (("fp8", False), ("fp8_fast_accum", True)):
            ms = timed(torch, lambda: torch._scaled_mm(x, y.t(), scale_a=one, scale_b=one,
                                                       out_dtype=torch.bfloat16, use_fast_accum=fast),
                       args.reps, 20)
            add(name, ms, flops, "flops_per_s", f"torch._scaled_mm e4m3, {n}^3, bf16 out, use_fast_accum={fast}")
    except (RuntimeError, TypeError) as e:  # no FP8 tensor cores (before Ada/Hopper) or another signature
        doc["skipped"].append({"op": "fp8", "why": str(e).splitlines()[0][:300]})
    return doc


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="-", help="where to write the JSON document (default: standard output)")
    p.add_argument("--reps", type=int, default=30, help="timed runs per point (median taken; default 30)")
    p.add_argument("--triad-mib", type=int, default=1024, help="MiB per triad array (default 1024)")
    p.add_argument("--n", type=int, default=8192, help="matrix side of the GEMMs (default 8192)")
    p.add_argument("--dry-run", action="store_true", help="print the plan as JSON without importing torch")
    args = p.parse_args(argv)
    if not 1 <= args.reps <= 1000:
        p.error("--reps must be in 1..1000")
    if not 64 <= args.triad_mib <= 16384:
        p.error("--triad-mib must be in 64..16384")
    if not 256 <= args.n <= 32768 or args.n % 16:
        p.error("--n must be a multiple of 16 in 256..32768")
    write(plan(args) if args.dry_run else measure(args), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
