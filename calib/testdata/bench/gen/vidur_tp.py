"""Issue 24, seventeenth session: Vidur's linear-layer profiles of a 70B model at tensor parallel 1, 2, 4 and 8.

Reads the git snapshot of microsoft/vidur (MIT; GPUFRAG_MIRROR/microsoft+vidur/repo, the `fetch` tool) at the
revision of the source vidur-profiling, and inserts holdout figures into calib/published.yaml after the source's
TP-1 linear figures: for each file below, TP 1, 2, 4 and 8 at 1, 128, 512 and 2,048 tokens, the sum of the
medians of attn_pre_proj, attn_post_proj, mlp_up_proj and mlp_down_proj (one layer's QKV, O, gate+up and down
projections, each GPU's slice at that degree), as the TP-1 figures are read. Where a file has several rows for a
key, the first is used, as for those. It refuses a file that already has the figures.
Run: python3 calib/testdata/bench/gen/vidur_tp.py
"""
import csv, io, os, sys
from common import git, q, REPO_ROOT

M = 'microsoft+vidur'
REV = '7d47513363ec447a741ac5e47241580b47724fbf'
PUB = os.path.join(REPO_ROOT, 'calib', 'published.yaml')
OPS = ('attn_pre_proj', 'attn_post_proj', 'mlp_up_proj', 'mlp_down_proj')
FILES = [
    # (Vidur's GPU directory, model, the id's GPU and model, gpu_note as the TP-1 figures give it)
    ('a100', 'meta-llama/Meta-Llama-3-70B', 'a100-80g', 'meta-llama-3-70b',
     "Vidur's 'a100' compute profiles are A100 80GB (Vidur README: A100 80GB DGX)"),
    ('h100', 'meta-llama/Llama-2-70b-hf', 'h100-80g', 'llama-2-70b-hf', "Vidur's 'h100' (H100 DGX)"),
]
TPS = (1, 2, 4, 8)
TOKENS = (1, 128, 512, 2048)
AFTER = '  - id: "vidur-a100-dgx-allreduce-tp2-8mib"\n'
NOTE = ("operator-level check of the linear-layer term across tensor-parallel degrees: each GPU's slice of a 70B "
        "model's projections, narrower as the degree grows; never fitted (the fitted Vidur figures are TP 1 of 7-8B models)")


def figures():
    out = []
    for gdir, model, gpu, mid, note in FILES:
        path = f'data/profiling/compute/{gdir}/{model}/mlp.csv'
        rows = list(csv.DictReader(io.StringIO(git(M, 'show', f'{REV}:{path}'))))
        for tp in TPS:
            for n in TOKENS:
                hits = [i for i, r in enumerate(rows) if r['num_tensor_parallel_workers'] == str(tp) and r['num_tokens'] == str(n)]
                if not hits:
                    sys.exit(f'{path}: no row for tp {tp}, {n} tokens')
                r = rows[hits[0]]
                v = round(sum(float(r[f'time_stats.{o}.median']) for o in OPS), 6)
                ref = (f'{path}, data row {hits[0] + 1} (num_tensor_parallel_workers={tp}, num_tokens={n}): sum of '
                       f'time_stats.{{attn_pre_proj,attn_post_proj,mlp_up_proj,mlp_down_proj}}.median')
                if len(hits) > 1:
                    ref += f'; the file has {len(hits)} rows for this key, the first is used'
                out.append(f'''  - id: {q(f"vidur-{gpu}-{mid}-tp{tp}-linear-n{n}")}
    source: "vidur-profiling"
    ref: {q(ref)}
    revision: "{REV}"
    url: {q(f"https://github.com/microsoft/vidur/blob/{REV}/{path}")}
    metric: "linear_layers_time_per_layer"
    unit: "ms"
    value: {v!r}
    read: "computed"
    precision: "sum of four printed medians (each to 0.001 ms), rounded to 1e-6"
    verified: true
    use: "holdout"
    use_note: {q(NOTE)}
    setup:
      model: {q(model)}
      gpu: "{gpu}"
      gpus: {tp}
      tp: {tp}
      engine: "vidur-profiler (sarathi-serve kernels, PyTorch)"
      engine_version: "sarathi-serve branch vidur"
      dtype: "fp16"
      gpu_note: {q(note)}
      workload:
        dataset: "operator profile"
        notes: "one decoder layer's QKV, O, gate+up and down projections, each GPU's slice at this degree; per-op medians in ms"
        num_tokens: {n}
      unknown:
        - "repetitions behind each median (not in the file)"
''')
    return out


def main():
    text = open(PUB).read()
    if '-tp8-linear-n' in text:
        sys.exit(f'{PUB} already has the TP figures')
    if text.count(AFTER) != 1:
        sys.exit(f'{PUB}: the all-reduce figures that the new ones go before are not where expected')
    figs = figures()
    open(PUB, 'w').write(text.replace(AFTER, ''.join(figs) + AFTER))
    print(f'{len(figs)} figures inserted', file=sys.stderr)


if __name__ == '__main__':
    main()
