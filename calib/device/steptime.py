#!/usr/bin/env python3
"""Time the step-time model's terms on a real GPU, for gpufrag calibrate --ops.

Builds the layers of a Llama-3.1-8B-shaped model (or, with --shape, one
GPU's share of Llama-3.1-70B's) with random bf16 weights (e4m3 with --dtype
fp8; no download) and times, with CUDA events, the three things sim.Profile
models apart:

  linear             one layer's four GEMMs (qkv, o, gate+up, down) at n tokens,
                     n = 1 .. 8192; fits linear.compute_eff_max,
                     compute_half_tokens and weight_bw_eff (with --dtype fp8,
                     fp8_compute_eff_max alone; attention is then not timed)
  prefill_attention  causal attention of one layer over a prompt of L tokens
                     (torch's scaled_dot_product_attention, is_causal); fits
                     attention.prefill_compute_eff
  decode_attention   one layer's attention of B sequences with one new token
                     each over C cached tokens (grouped-query, K and V read
                     once: matmul, softmax, matmul); fits attention.kv_bw_eff

Each point is the median of --reps timed runs after warm-up, with several
copies of the weights cycled so that the GEMMs read them from memory, not
from L2. It writes one JSON document (schema gpufrag-steptime-ops/1) to
--out (default: standard output). About 1-3 minutes on an H100/H200, under
8 on anything with 24 GiB or more (points that do not fit are skipped and
listed).

  python3 calib/device/steptime.py --out ops.json
  go run ./cmd/gpufrag calibrate --ops ops.json --gpu h200-141g

--dry-run prints the plan (shapes and points) without importing torch.
Only the standard library and torch are used.
"""

import argparse
import datetime
import json
import statistics
import sys
import time

SCHEMA = "gpufrag-steptime-ops/1"

# Llama-3.1-8B (meta-llama/Llama-3.1-8B config.json).
MODEL = {
    "name": "llama-3.1-8b",
    "hidden": 4096,
    "heads": 32,
    "kv_heads": 8,
    "head_dim": 128,
    "intermediate": 14336,
    "layers": 32,
    "vocab": 128256,
    "dtype": "bf16",
}


def shard(m, name, tp):
    """One GPU's share of m under tensor parallelism tp: heads, KV heads and
    the MLP split tp ways (as vLLM and SGLang split them), hidden kept."""
    if m["heads"] % tp or m["kv_heads"] % tp or m["intermediate"] % tp:
        raise ValueError(f"{m['name']} does not split {tp} ways")
    return dict(m, name=name, heads=m["heads"] // tp, kv_heads=m["kv_heads"] // tp,
                intermediate=m["intermediate"] // tp)


# Llama-3.1-70B (meta-llama/Llama-3.1-70B config.json) and one GPU's share of
# it at TP 4 and TP 8: the GEMM and attention shapes a 70B server runs.
LLAMA_70B = {
    "name": "llama-3.1-70b",
    "hidden": 8192,
    "heads": 64,
    "kv_heads": 8,
    "head_dim": 128,
    "intermediate": 28672,
    "layers": 80,
    "vocab": 128256,
    "dtype": "bf16",
}
SHAPES = {
    "llama-3.1-8b": MODEL,
    "llama-3.1-70b-tp4": shard(LLAMA_70B, "llama-3.1-70b-tp4", 4),
    "llama-3.1-70b-tp8": shard(LLAMA_70B, "llama-3.1-70b-tp8", 8),
}

LINEAR_TOKENS = [1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 2048, 4096, 8192]
PREFILL_TOKENS = [128, 256, 512, 1024, 2048, 4096, 8192]
DECODE_POINTS = [(b, c) for b in (1, 8, 32, 128) for c in (512, 2048, 8192)]


def gemm_shapes(m):
    """The (in, out) features of one layer's four GEMMs."""
    h, d = m["hidden"], m["head_dim"]
    q, kv = m["heads"] * d, m["kv_heads"] * d
    return [("qkv", h, q + 2 * kv), ("o", q, h), ("gate_up", h, 2 * m["intermediate"]), ("down", m["intermediate"], h)]


def plan(m):
    attention = m["dtype"] != "fp8"  # --dtype fp8 times the linear layers only (measure)
    return {
        "model": m,
        "gemms": [{"name": n, "in": i, "out": o} for n, i, o in gemm_shapes(m)],
        "linear_tokens": LINEAR_TOKENS,
        "prefill_tokens": PREFILL_TOKENS if attention else [],
        "decode_points": [{"batch": b, "context": c} for b, c in DECODE_POINTS] if attention else [],
    }


def header(torch, dev, schema, reps):
    """The fields every document of calib/device starts with: what was measured, on what, when."""
    props = torch.cuda.get_device_properties(dev)
    return {
        "schema": schema,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu_name": props.name,
        "gpu_memory_bytes": int(props.total_memory),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "reps": reps,
    }


def timings(torch, fn, reps, warmup=3):
    """Milliseconds of fn() in each of reps runs after warmup, each timed with CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b))
    return out


def timed(torch, fn, reps, warmup=3):
    """Median milliseconds of fn() over reps runs (timings)."""
    return statistics.median(timings(torch, fn, reps, warmup))


def capture(torch, fn, inner=1):
    """A torch.cuda.CUDAGraph of inner calls of fn(), after 3 warm-up calls.

    The warm-up runs on a side stream, as torch requires before a capture
    (allocations and lazy initialisation happen outside the graph).
    """
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(inner):
            fn()
    return g


def graphed(torch, fn, reps, inner=8):
    """Median milliseconds of one fn() replayed from a CUDA graph of inner calls.

    A serving engine replays its decode steps as CUDA graphs, so an operator's
    time there is its kernels' time, not Python's launch latency (tens of
    microseconds a kernel, more than a small GEMM takes).
    """
    g = capture(torch, fn, inner)
    ms = timed(torch, g.replay, reps)
    del g
    return ms / inner


def measure(args, m):
    import torch  # noqa: PLC0415 (imported here so --dry-run needs no torch)
    import torch.nn.functional as F  # noqa: PLC0415,N812

    dev = torch.device("cuda")
    bf16 = torch.bfloat16
    torch.manual_seed(0)
    doc = header(torch, dev, SCHEMA, args.reps)
    doc.update({
        "timing": "eager" if args.eager else "cuda-graph",
        "model": m,
        "linear": [],
        "prefill_attention": [],
        "decode_attention": [],
        "skipped": [],
    })
    start = time.monotonic()
    clock = (lambda fn, reps: timed(torch, fn, reps)) if args.eager else (lambda fn, reps: graphed(torch, fn, reps))

    # Linear: enough copies of one layer's weights that a pass over them all
    # exceeds any L2 (a layer is 436 MB in bf16; 4 copies, 1.7 GB).
    fp8 = m["dtype"] == "fp8"
    wtype = torch.float8_e4m3fn if fp8 else bf16
    copies = [[(torch.randn(o, i, device=dev) * 0.02).to(wtype) for _, i, o in gemm_shapes(m)] for _ in range(4)]
    layer_bytes = sum(w.numel() * w.element_size() for w in copies[0])
    layer_flops_per_token = sum(2 * w.shape[0] * w.shape[1] for w in copies[0])
    # FP8 as vLLM's and SGLang's W8A8 checkpoints run: activations quantized
    # per token (one scale a row), weights per output channel, the product in
    # bf16 (torch._scaled_mm, cuBLASLt). The activations' quantizing is not
    # timed: the GEMMs get inputs already in FP8.
    wscale = {o: torch.ones(1, o, device=dev, dtype=torch.float32) for _, _, o in gemm_shapes(m)}
    for n in LINEAR_TOKENS:
        x = {i: torch.randn(n, i, device=dev).to(wtype) for _, i, _ in gemm_shapes(m)}
        xscale = torch.ones(n, 1, device=dev, dtype=torch.float32)
        k = [0]

        def run():
            ws = copies[k[0] % len(copies)]
            k[0] += 1
            for w in ws:
                if fp8:
                    torch._scaled_mm(x[w.shape[1]], w.t(), scale_a=xscale, scale_b=wscale[w.shape[0]], out_dtype=bf16)
                else:
                    torch.matmul(x[w.shape[1]], w.t())

        ms = clock(run, args.reps)
        doc["linear"].append({"tokens": n, "ms_per_layer": ms})
    doc["linear_layer_bytes"] = layer_bytes
    doc["linear_flops_per_token"] = layer_flops_per_token
    del copies
    torch.cuda.empty_cache()

    if fp8:
        # Attention runs in bf16 whatever the weights (the KV cache too): the
        # same kernels as --dtype bf16 times.
        doc["skipped"].append({"op": "attention", "why": "bf16 whatever the weights: time it with --dtype bf16"})
        doc["seconds"] = round(time.monotonic() - start, 3)
        return doc

    heads, kvh, d = m["heads"], m["kv_heads"], m["head_dim"]
    for n in PREFILL_TOKENS:
        try:
            q = torch.randn(1, heads, n, d, device=dev, dtype=bf16)
            k = torch.randn(1, heads, n, d, device=dev, dtype=bf16)  # KV heads expanded: FLOPs are the query heads'
            v = torch.randn(1, heads, n, d, device=dev, dtype=bf16)
            ms = clock(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), args.reps)
            doc["prefill_attention"].append({"tokens": n, "ms_per_layer": ms})
            del q, k, v
        except torch.cuda.OutOfMemoryError:
            doc["skipped"].append({"op": "prefill_attention", "tokens": n, "why": "out of memory"})
        torch.cuda.empty_cache()

    group = heads // kvh
    scale = d ** -0.5
    for b, c in DECODE_POINTS:
        try:
            q = torch.randn(b, kvh, group, d, device=dev, dtype=bf16)
            kc = torch.randn(b, kvh, c, d, device=dev, dtype=bf16)
            vc = torch.randn(b, kvh, c, d, device=dev, dtype=bf16)

            def attend():
                s = torch.matmul(q, kc.transpose(-1, -2)) * scale
                torch.matmul(torch.softmax(s.float(), dim=-1).to(bf16), vc)

            ms = clock(attend, args.reps)
            doc["decode_attention"].append({"batch": b, "context": c, "ms_per_layer": ms,
                                            "kv_bytes": 2 * kc.numel() * kc.element_size()})
            del q, kc, vc
        except torch.cuda.OutOfMemoryError:
            doc["skipped"].append({"op": "decode_attention", "batch": b, "context": c, "why": "out of memory"})
        torch.cuda.empty_cache()
    doc["seconds"] = round(time.monotonic() - start, 3)
    return doc


def write(doc, out):
    """Write doc as indented JSON to the file out, or standard output for "-"."""
    text = json.dumps(doc, indent=1) + "\n"
    if out == "-":
        sys.stdout.write(text)
    else:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="-", help="where to write the JSON document (default: standard output)")
    p.add_argument("--reps", type=int, default=20, help="timed runs per point (median taken; default 20)")
    p.add_argument("--shape", default="llama-3.1-8b", choices=sorted(SHAPES),
                   help="the layer to time: Llama-3.1-8B's, or one GPU's share of Llama-3.1-70B at TP 4 or 8 (default llama-3.1-8b)")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp8"],
                   help="the linear layers' weights: bf16, or fp8 (e4m3, per-token and per-channel scales, as W8A8 "
                        "checkpoints run; attention is then not timed, being bf16 either way) (default bf16)")
    p.add_argument("--eager", action="store_true",
                   help="time each launch from Python instead of replaying a CUDA graph (adds launch latency to small ops)")
    p.add_argument("--dry-run", action="store_true", help="print the plan as JSON without importing torch")
    args = p.parse_args(argv)
    if args.reps < 1 or args.reps > 1000:
        p.error("--reps must be in 1..1000")
    m = dict(SHAPES[args.shape], dtype=args.dtype)
    write(plan(m) if args.dry_run else measure(args, m), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
