"""The GPU workload of probe/device-check.sh: a small Llama-shaped model with
random weights (tiny-llama.json; transformers' LlamaForCausalLM when it can
be imported, else the same architecture in plain torch), no download.

    python workload.py decode --seconds S --out RESULT.json
    python workload.py oom --out RESULT.json

decode: batches of B sequences, a prompt then greedy decode steps with a KV
cache, a new batch every --new-tokens steps (the cache is freed and
rebuilt, as a server's requests come and go), for --seconds; each decode
step is timed (torch.cuda.synchronize() before and after). At the end, if
gpufrag_probe runs in this process, its own figures and a timed
_snapshot() and pickle of the state.

oom: a few decode steps, then 1 GiB allocations until one fails, inside
this process; the OutOfMemoryError is recorded and raised again, uncaught,
so the process ends as a server does on an OOM (exit status 1).
"""
import argparse
import json
import math
import os
import pickle
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OOM_CHUNK = 1 << 30  # the size of every allocation of the OOM phase: the failed one is this size


def load_config():
    with open(os.path.join(HERE, "tiny-llama.json")) as f:
        return json.load(f)


# --- the plain-torch Llama (used without transformers) ----------------------

class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        v = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(v + self.eps)).to(x.dtype) * self.weight


def rope(x, pos, theta):
    d = x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d))
    f = pos.float()[:, None] * inv[None, :]  # (T, d/2)
    cos, sin = f.cos().to(x.dtype), f.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    c, s = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
    return x * c + torch.cat([-x2, x1], -1) * s


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, self.nh, self.nkv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
        self.hd = c.get("head_dim") or h // self.nh
        self.theta = c["rope_theta"]
        self.q = nn.Linear(h, self.nh * self.hd, bias=False)
        self.k = nn.Linear(h, self.nkv * self.hd, bias=False)
        self.v = nn.Linear(h, self.nkv * self.hd, bias=False)
        self.o = nn.Linear(self.nh * self.hd, h, bias=False)
        self.gate = nn.Linear(h, c["intermediate_size"], bias=False)
        self.up = nn.Linear(h, c["intermediate_size"], bias=False)
        self.down = nn.Linear(c["intermediate_size"], h, bias=False)
        self.n1 = RMSNorm(h, c["rms_norm_eps"])
        self.n2 = RMSNorm(h, c["rms_norm_eps"])

    def forward(self, x, pos, cache):
        b, t, _ = x.shape
        y = self.n1(x)
        q = self.q(y).view(b, t, self.nh, self.hd).transpose(1, 2)
        k = self.k(y).view(b, t, self.nkv, self.hd).transpose(1, 2)
        v = self.v(y).view(b, t, self.nkv, self.hd).transpose(1, 2)
        q, k = rope(q, pos, self.theta), rope(k, pos, self.theta)
        if cache is not None:  # grow the cache by concatenation, as transformers' DynamicCache
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        rep = self.nh // self.nkv
        a = F.scaled_dot_product_attention(q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1),
                                           is_causal=cache is None and t > 1)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, -1))
        y = self.n2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y)), (k, v)


class TinyLlama(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)

    def forward(self, ids, past):
        start = 0 if past is None else past[0][0].shape[2]
        pos = torch.arange(start, start + ids.shape[1], device=ids.device)
        x = self.embed(ids)
        new = []
        for i, layer in enumerate(self.layers):
            x, kv = layer(x, pos, None if past is None else past[i])
            new.append(kv)
        return self.head(self.norm(x[:, -1:])), new


# --- the two implementations behind one step function -----------------------

def build():
    """(step function, implementation name). step(ids, past) -> (logits of
    the last position, past)."""
    c = load_config()
    torch.manual_seed(0)
    try:
        import transformers
        from transformers import LlamaConfig, LlamaForCausalLM
    except Exception:
        transformers = None
    if transformers is not None:
        cfg = LlamaConfig(**{k: v for k, v in c.items() if k not in ("architectures", "torch_dtype", "model_type")})
        with torch.device("cuda"):
            model = LlamaForCausalLM(cfg)
        model = model.to(torch.bfloat16).eval()

        def step(ids, past):
            out = model(input_ids=ids, past_key_values=past, use_cache=True)
            return out.logits[:, -1:], out.past_key_values
        return step, "transformers %s LlamaForCausalLM" % transformers.__version__
    with torch.device("cuda"):
        model = TinyLlama(c)
    model = model.to(torch.bfloat16).eval()
    return model.forward, "plain torch TinyLlama"


def decode(step, seconds, batch, prompt, new_tokens, on_step=None):
    """Runs batches until seconds have passed; returns decode step times (s)."""
    vocab = load_config()["vocab_size"]
    times = []
    end = time.monotonic() + seconds
    g = torch.Generator(device="cuda").manual_seed(1)
    while time.monotonic() < end:
        ids = torch.randint(0, vocab, (batch, prompt), device="cuda", generator=g)
        logits, past = step(ids, None)  # prefill: not timed
        tok = logits.argmax(-1)
        for _ in range(new_tokens):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            logits, past = step(tok, past)
            tok = logits.argmax(-1)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
            if on_step is not None:
                on_step()
            if time.monotonic() >= end:
                break
        del past, logits, tok, ids
    return times


def summary(times):
    if len(times) < 2:
        return None
    s = sorted(times)
    n = len(s)
    return {"steps": n, "mean_ms": 1e3 * statistics.fmean(s), "p50_ms": 1e3 * s[n // 2],
            "p99_ms": 1e3 * s[min(n - 1, int(math.ceil(0.99 * n)) - 1)], "max_ms": 1e3 * s[-1],
            "first_half_mean_ms": 1e3 * statistics.fmean(times[: n // 2]),
            "second_half_mean_ms": 1e3 * statistics.fmean(times[n // 2:])}


def probe_figures():
    """The running probe's own figures and a timed snapshot and pickle
    (None without a probe)."""
    gp = sys.modules.get("gpufrag_probe")
    if gp is None:
        return None
    from gpufrag_probe import _probe
    probes = list(_probe._probes.values())
    if not probes:
        return None
    p = probes[0]
    path = p.dump("end")
    snaps, pickles, size = [], [], 0
    snap = None
    for _ in range(3):
        t0 = time.perf_counter()
        snap = torch.cuda.memory._snapshot()
        snaps.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        size = len(pickle.dumps(snap, protocol=pickle.DEFAULT_PROTOCOL))
        pickles.append(time.perf_counter() - t0)
    entries = [len(t) for t in snap.get("device_traces", [])]
    span = 0.0
    for tr in snap.get("device_traces", []):
        ts = [e.get("time_us") for e in tr if isinstance(e.get("time_us"), int)]
        if len(ts) > 1:
            span = max(span, (ts[-1] - ts[0]) / 1e6)
    st = p.stats()
    return {"path": path, "labels": p.labels, "stats": {k: v for k, v in st.items() if not isinstance(v, float)
                                                         or math.isfinite(v)},
            "snapshot_s": sorted(snaps), "pickle_s": sorted(pickles), "pickle_bytes": size,
            "trace_entries": entries, "trace_span_s": span,
            "entries_per_s": (sum(entries) / span) if span > 0 else None,
            "history": st.get("history"), "max_entries": p.max_entries, "interval_s": p.interval_s}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["decode", "oom"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, default=50.0)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--prompt", type=int, default=256)
    ap.add_argument("--new-tokens", type=int, default=256)
    a = ap.parse_args()
    res = {"mode": a.mode, "torch": torch.__version__, "cuda": torch.version.cuda,
           "gpu": torch.cuda.get_device_name(0), "pid": os.getpid()}
    t0 = time.monotonic()
    step, impl = build()
    res["model"] = impl
    res["build_s"] = time.monotonic() - t0
    res["probe_in_process"] = "gpufrag_probe" in sys.modules

    def write():
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)

    with torch.inference_mode():
        if a.mode == "decode":
            decode(step, 5.0, a.batch, a.prompt, a.new_tokens)  # warm-up: kernels, cache sizes
            res["decode"] = summary(decode(step, a.seconds, a.batch, a.prompt, a.new_tokens))
            res["probe"] = probe_figures()
            write()
            return 0
        decode(step, 3.0, a.batch, a.prompt, a.new_tokens)
        held = []
        res["oom_chunk_bytes"] = OOM_CHUNK
        try:
            while True:
                held.append(torch.empty(OOM_CHUNK, dtype=torch.uint8, device="cuda"))
        except torch.cuda.OutOfMemoryError as e:
            res["oom_after_chunks"] = len(held)
            res["oom_error"] = str(e).splitlines()[0][:300]
            res["oom_wall_time"] = time.time()
            write()
            raise  # uncaught: the process ends with this error, as a server would
    return 0


if __name__ == "__main__":
    sys.exit(main())
