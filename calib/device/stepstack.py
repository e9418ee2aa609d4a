#!/usr/bin/env python3
"""Time whole decode steps of a stack of decoder layers, from a CUDA graph and eagerly.

steptime.py times each operator alone. This times what a server runs for a
decode step: --layers decoder layers one after another (RMSNorm, the fused
QKV GEMM, a rotary-like elementwise pass on q and k, grouped-query decode
attention of B sequences with one new token each over C cached tokens
(--attention: unfused matmul, softmax, matmul as steptime.py times it, or
torch's scaled_dot_product_attention), the O GEMM and residual add,
RMSNorm, the gate+up GEMM, SiLU(gate) x up, the down GEMM and residual add;
about 40 kernels a layer, random bf16 weights, no download, one GPU, no
all-reduce), two ways:

  graph  the whole step captured once in a torch.cuda.CUDAGraph and replayed,
         as a server replays decode steps up to its largest capture size
  eager  the same Python forward called directly: kernels launched one by
         one and pipelined (no synchronisation between them), as a server
         runs a batch larger than its capture sizes

Each point is the median of --reps steps after warm-up, timed with CUDA
events around the whole step; the fastest and the 90th percentile are kept
so the noise shows. eager - graph per layer is the launch overhead a step
pays outside a graph: the step-time model's overhead.eager_per_layer_ns
adds it to every such step whatever the batch, so these points say whether
it stays (launches slower than the kernels) or hides behind the kernels at
large batches. graph per layer, against the model's linear, attention and
layer-kernel terms, says how a whole step compares with them.

Shapes (steptime.SHAPES): llama-3.1-70b-tp4, one GPU's share of Llama-3.1-70B
at TP 4, at C = 768 and B = 1 .. 1280 (the span of datacrunch's SGLang runs
on 4x H200: 8 to about 1,250 running requests of about 765 tokens), and
llama-3.1-8b at C = 1024, B = 1 .. 512. The K and V caches are one buffer
per shape, read by every layer (memory for B = 1280); each layer reads over
400 MB of weights of its own between two attentions, more than any L2
holds, so every layer's attention reads K and V from memory as a server's
does.

Run time: 18 points x 2 modes x (--reps + warm-up) steps of at most 13 ms
(8 layers of the 70B share at B = 1280): about 7 seconds of measuring and
15 of wall time on an H200 (2026-12-04). Points that do not fit in memory
are skipped and listed.

  python3 calib/device/stepstack.py --out stepstack.json

--dry-run prints the plan as JSON without importing torch. Only the
standard library and torch are used.
"""

import argparse
import os
import statistics
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from steptime import SHAPES, capture, gemm_shapes, header, timings, write  # noqa: E402

SCHEMA = "gpufrag-stepstack/1"

# (context, batches) per shape.
POINTS = {
    "llama-3.1-70b-tp4": (768, [1, 8, 32, 64, 128, 160, 256, 384, 512, 768, 1024, 1280]),
    "llama-3.1-8b": (1024, [1, 8, 32, 128, 256, 512]),
}
LAYERS = 8


def plan(shapes, layers, attention):
    return {
        "schema": SCHEMA,
        "layers": layers,
        "attention": attention,
        "modes": ["graph", "eager"],
        "shapes": [{"model": SHAPES[s], "context": POINTS[s][0], "batches": POINTS[s][1]} for s in shapes],
    }


def stats(ms):
    s = sorted(ms)
    return statistics.median(s), s[0], s[min(len(s) - 1, int(0.9 * len(s)))]


def measure_shape(torch, m, context, batches, layers, reps, skipped, attention):
    dev = torch.device("cuda")
    bf16 = torch.bfloat16
    h, heads, kvh, d = m["hidden"], m["heads"], m["kv_heads"], m["head_dim"]
    group = heads // kvh
    q_dim, kv_dim = heads * d, kvh * d
    scale = d ** -0.5
    eps = 1e-5

    def weight(o, i):
        return torch.randn(o, i, device=dev, dtype=bf16) * 0.02

    stack = []
    for _ in range(layers):
        w = {n: weight(o, i) for n, i, o in gemm_shapes(m)}
        w["norm1"] = torch.ones(h, device=dev, dtype=bf16)
        w["norm2"] = torch.ones(h, device=dev, dtype=bf16)
        stack.append(w)

    def rmsnorm(x, w):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(bf16) * w

    def rotate(t, cos, sin):
        # Stand-in for the rotary embedding: the same elementwise passes
        # over the head dimension (halves swapped, scaled, added).
        a, b = t.chunk(2, dim=-1)
        return t * cos + torch.cat((-b, a), dim=-1) * sin

    points = []
    for b in batches:
        try:
            kc = torch.randn(b, kvh, context, d, device=dev, dtype=bf16)
            vc = torch.randn(b, kvh, context, d, device=dev, dtype=bf16)
            x0 = torch.randn(b, h, device=dev, dtype=bf16)
            cos = torch.randn(b, 1, d, device=dev, dtype=bf16)
            sin = torch.randn(b, 1, d, device=dev, dtype=bf16)
            out = torch.empty_like(x0)

            def step():
                x = x0
                for w in stack:
                    qkv = torch.matmul(rmsnorm(x, w["norm1"]), w["qkv"].t())
                    q, k, _ = qkv.split([q_dim, kv_dim, kv_dim], dim=-1)
                    q = rotate(q.view(b, heads, d), cos, sin)
                    rotate(k.view(b, kvh, d), cos, sin)  # the new K would be written to the cache
                    if attention == "sdpa":
                        a = torch.nn.functional.scaled_dot_product_attention(q.view(b, heads, 1, d), kc, vc, enable_gqa=True)
                    else:
                        q = q.view(b, kvh, group, d)
                        s = torch.matmul(q, kc.transpose(-1, -2)) * scale
                        a = torch.matmul(torch.softmax(s.float(), dim=-1).to(bf16), vc)
                    x = x + torch.matmul(a.reshape(b, q_dim), w["o"].t())
                    gate, up = torch.matmul(rmsnorm(x, w["norm2"]), w["gate_up"].t()).chunk(2, dim=-1)
                    x = x + torch.matmul(torch.nn.functional.silu(gate) * up, w["down"].t())
                out.copy_(x)

            eager = stats(timings(torch, step, reps, warmup=3))
            g = capture(torch, step)
            graph = stats(timings(torch, g.replay, reps, warmup=3))
            del g
            points.append({
                "batch": b, "context": context,
                "graph_ms": graph[0], "graph_ms_min": graph[1], "graph_ms_p90": graph[2],
                "eager_ms": eager[0], "eager_ms_min": eager[1], "eager_ms_p90": eager[2],
                "graph_ms_per_layer": graph[0] / layers,
                "eager_minus_graph_us_per_layer": (eager[0] - graph[0]) * 1e3 / layers,
                "kv_bytes_per_layer": 2 * kc.numel() * kc.element_size(),
            })
            del kc, vc, x0, out
        except torch.cuda.OutOfMemoryError:
            skipped.append({"model": m["name"], "batch": b, "context": context, "why": "out of memory"})
        torch.cuda.empty_cache()
    del stack
    torch.cuda.empty_cache()
    return points


def measure(args, shapes):
    import torch  # noqa: PLC0415 (imported here so --dry-run needs no torch)

    torch.manual_seed(0)
    doc = header(torch, torch.device("cuda"), SCHEMA, args.reps)
    doc.update({"layers": args.layers, "attention": args.attention, "shapes": [], "skipped": []})
    start = time.monotonic()
    with torch.no_grad():
        for name in shapes:
            m = SHAPES[name]
            context, batches = POINTS[name]
            pts = measure_shape(torch, m, context, batches, args.layers, args.reps, doc["skipped"], args.attention)
            doc["shapes"].append({"model": m, "context": context, "points": pts})
    doc["seconds"] = round(time.monotonic() - start, 3)
    return doc


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="-", help="where to write the JSON document (default: standard output)")
    p.add_argument("--reps", type=int, default=20, help="timed steps per point and mode (median taken; default 20)")
    p.add_argument("--layers", type=int, default=LAYERS, help=f"decoder layers in the stack (default {LAYERS})")
    p.add_argument("--shapes", default=",".join(POINTS),
                   help="comma-separated shapes to time, of " + ", ".join(POINTS) + " (default: both)")
    p.add_argument("--attention", default="matmul", choices=["matmul", "sdpa"],
                   help="decode attention as steptime.py times it (matmul, softmax, matmul: unfused, K and V read once) "
                        "or torch's scaled_dot_product_attention with grouped-query heads (a fused kernel where torch has "
                        "one) (default matmul)")
    p.add_argument("--dry-run", action="store_true", help="print the plan as JSON without importing torch")
    args = p.parse_args(argv)
    if args.reps < 1 or args.reps > 1000:
        p.error("--reps must be in 1..1000")
    if args.layers < 1 or args.layers > 80:
        p.error("--layers must be in 1..80")
    shapes = [s for s in args.shapes.split(",") if s]
    for s in shapes:
        if s not in POINTS:
            p.error(f"--shapes: unknown shape {s!r} (known: {', '.join(POINTS)})")
    if not shapes:
        p.error("--shapes: none given")
    write(plan(shapes, args.layers, args.attention) if args.dry_run else measure(args, shapes), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
