"""Issue 24, fifteenth session: the never-seen source dstack-8xh100-405b-fp8 (dstackai/benchmarks, Apache-2.0).

Reads the git snapshot of dstackai/benchmarks (GPUFRAG_MIRROR/dstackai+benchmarks/repo): the vLLM
benchmark_serving --save-result files of nvidia/8xh100/raw_data{,2} at commit 64befac (where they were
added; a later commit moved them away) and, at 06c957a, nvidia/8xh100/charts/qps_output.csv, the
repository's own table of each file's server flags. It keeps the runs with num-scheduler-steps 1 (multi-step
scheduling is not modelled) and chunked prefill on whose flags are vLLM's own values (a chunked-off row
reads max-num-batched-tokens 512, which vLLM 0.6 refuses without chunked prefill, so those rows' flags are
not what the server ran), checks every printed value against the per-request arrays, writes the trimmed
copies into calib/testdata/bench, and inserts the source and its figures into calib/published.yaml (it
refuses a file that has them). Run: python3 calib/testdata/bench/gen/dstack.py
"""
import csv, io, json, os, sys
from common import git, gitb, blob, pct, q, num, REPO_ROOT

M, REPO = 'dstackai+benchmarks', 'dstackai/benchmarks'
C_RAW = '64befacc865e9037758df18160ae239dc51f2aae'  # "Add 8xH100 Llama3.1-405B-Fp8 test results" (2024-11-11)
C_HEAD = '06c957ab51572ca18db9c1f4bb254a9eb86df4d7'  # README and charts/qps_output.csv
SRC = 'dstack-8xh100-405b-fp8'
BENCH = os.path.join(REPO_ROOT, 'calib', 'testdata', 'bench')
PUB = os.path.join(REPO_ROOT, 'calib', 'published.yaml')

# The server configurations replayed: (max-num-batched-tokens, max-num-seqs) of qps_output.csv, all with
# num-scheduler-step 1, enable-chunked-prefill TRUE, max-seq-len-to-capture 8192, no prefix caching.
CONFIGS = [(512, 256), (512, 128), (1024, 1024)]


def rows():
    text = git(M, 'show', f'{C_HEAD}:nvidia/8xh100/charts/qps_output.csv')
    return list(csv.DictReader(io.StringIO(text)))


def raw_path(name):
    for d in ('raw_data', 'raw_data2'):
        p = f'nvidia/8xh100/{d}/{name}.json'
        if git(M, 'ls-tree', '--name-only', C_RAW, p).strip():
            return p
    sys.exit(f'{name}: not under nvidia/8xh100/raw_data or raw_data2 at {C_RAW}')


def check(d, row, p):
    """The printed values against the per-request arrays and against the CSV row."""
    il, ol, tt, itl = d['input_lens'], d['output_lens'], d['ttfts'], d['itls']
    n = len(ol)
    assert d['completed'] == d['num_prompts'] == n == len(il) == len(tt) == 1000, p
    assert not any(d['errors']), p
    assert abs(pct(tt, 0.5) * 1000 - d['median_ttft_ms']) < 1e-6, p
    # benchmark_serving of vLLM 0.6.3 prints (latency - ttft) / (output_len - 1) over the requests with
    # more than one output token; sum(itls) is latency - ttft up to the client's timer reads.
    tp = [sum(itl[i]) / (ol[i] - 1) for i in range(n) if ol[i] > 1]
    re_tpot = pct(tp, 0.5) * 1000
    assert abs(re_tpot / d["median_tpot_ms"] - 1) < 0.006, (p, re_tpot, d["median_tpot_ms"])
    print(f"{p}: TPOT recomputed {re_tpot:.3f} printed {d['median_tpot_ms']:.3f}", file=sys.stderr)
    assert abs(sum(ol) / d['duration'] / d['output_throughput'] - 1) < 1e-9, p
    for k, c in (('median_ttft_ms', 'median_ttft_ms'), ('median_tpot_ms', 'median_tpot_ms'), ('output_throughput', 'output_throughput')):
        assert abs(float(row[c]) / d[k] - 1) < 1e-8, (p, k, row[c], d[k])
    return re_tpot


HOLDOUT_NOTE = ("never fitted: a source found after the joint model's form was set, judged by it out of sample. Meta's FP8 "
                "checkpoint keeps every self-attention projection, the first and last layers and lm_head in BF16 (the Llama 3 "
                "paper, arXiv 2407.21783, section 6.2; the conversion script's modules_to_not_convert: model.layers.0, "
                "model.layers.125, lm_head, each self_attn), about 20% of the parameters, 487 GB of weights: setup.unquantized "
                "(model.Unquantized) describes it (calib/README.md, \"How each source was read\")")


def ttft_note(d):
    """The reason a run's median TTFT is a cross-check: the client's zero TTFTs."""
    z = [i for i, x in enumerate(d['output_lens']) if x == 0]
    assert all(d['ttfts'][i] == 0 and d['errors'][i] == '' for i in z)
    return (f"a cross-check, not counted: {len(z)} of the run's 1,000 successful requests returned no text (output_lens 0, "
            "no error), and benchmark_serving 0.6.3 records a TTFT of 0 for a stream with no text chunk, so the printed median "
            "is taken over a list with that many zeros, not an engine's first-token times (the rule calibrate applies to such "
            "files: calib/replay.go). The run's TPOT and throughput are held out (calib/README.md, \"How each source was read\")")


def main():
    pub = open(PUB).read()
    if f'source: "{SRC}"' in pub or f'id: "{SRC}"' in pub:
        sys.exit(f'{PUB} already has {SRC}: run on the file before it')
    sel = []
    for r in rows():
        if r['num-scheduler-step'] != '1' or r['enable-chunked-prefill'] != 'TRUE' or r['max-seq-len-to-capture'] != '8192':
            continue
        if (int(r['max-num-batched-tokens']), int(r['max-num-seqs'])) not in CONFIGS or r['enable-prefix-caching'] != 'FALSE':
            continue
        sel.append(r)
    assert len(sel) == 9, len(sel)
    sel.sort(key=lambda r: (CONFIGS.index((int(r['max-num-batched-tokens']), int(r['max-num-seqs']))), float(r['request_rate'])))
    url_csv = f'https://github.com/{REPO}/blob/{C_HEAD}/nvidia/8xh100/charts/qps_output.csv'
    figs, copies = [], []
    inputs = None
    for r in sel:
        p = raw_path(r['filename'])
        d = json.loads(gitb(M, 'show', f'{C_RAW}:{p}'))
        check(d, r, p)
        if inputs is None:
            inputs = d['input_lens']
        assert d['input_lens'] == inputs, p  # the same 1,000 ShareGPT prompts (seed 0) in every run
        mbt, mns, rate = int(r['max-num-batched-tokens']), int(r['max-num-seqs']), d['request_rate']
        tag = f'b{mbt}-s{mns}-qps{rate:g}'
        name = f'dstack-h100-llama-3.1-405b-fp8-tp8-{tag}.lens.json'
        keep = ['date', 'backend', 'model_id', 'tokenizer_id', 'num_prompts', 'request_rate', 'duration', 'completed',
                'total_input_tokens', 'total_output_tokens', 'input_lens', 'output_lens']
        with open(os.path.join(BENCH, name), 'w') as f:
            f.write(json.dumps({k: d[k] for k in keep}))
        b = blob(M, C_RAW, p)
        copies.append((name, p, b, os.path.getsize(os.path.join(BENCH, name))))
        ol = d['output_lens']
        w = dict(arrival='poisson', chunked_prefill=True, dataset='sharegpt', ignore_eos=False, local_copy=f'calib/testdata/bench/{name}',
                 lengths=f'input_lens/output_lens in the file (input {sum(inputs):,} tokens, mean {sum(inputs)/len(inputs):.1f}, max {max(inputs)}; '
                         f'output mean {sum(ol)/len(ol):.1f}, max {max(ol)}, {sum(1 for x in ol if x == 1)} of one token, {sum(1 for x in ol if x == 0)} of none: no text returned)',
                 max_model_len=91680, max_num_batched_tokens=mbt, max_num_seqs=mns, num_prompts=1000, num_scheduler_steps=1,
                 prefix_caching=False, request_rate=float(rate),
                 notes='server flags of the run from the repository\'s charts/qps_output.csv row (num-scheduler-step 1, '
                       f'enable-chunked-prefill TRUE, max-num-batched-tokens {mbt}, max-num-seqs {mns}, max-seq-len-to-capture 8192, '
                       'enable-prefix-caching FALSE); every load is overloaded (about 10 req/s served against 16, 32 and 1000 '
                       'offered): the TTFTs are queueing, the throughput the saturation rate')
        setup = dict(model='meta-llama/Llama-3.1-405B-FP8', gpu='h100-80g', gpus=8, tp=8, engine='vllm-v0',
                     engine_version='0.6.3 (0.6.3.post2.dev308+gb489fc3c, a nightly wheel: collect_env in nvidia/8xh100/README.md; V0)',
                     dtype='bf16', weight_dtype='fp8', unquantized='self_attn,layers.0,layers.125', kv_dtype='bf16',
                     options='vllm serve meta-llama/Llama-3.1-405B-FP8 --tensor-parallel-size 8 --max-model-len 91680 '
                             '(comparison/h100sxm5_vs_mi300x/README.md) with the row\'s flags; client benchmark_serving.py '
                             '--backend vllm --dataset-name sharegpt --request-rate QPS (1,000 prompts, seed 0: the defaults)',
                     gpu_note='8x NVIDIA H100 80GB HBM3 (SXM5), NVLink NV18 between every pair (collect_env in nvidia/8xh100/README.md)',
                     workload=w,
                     unknown=['arrival times (benchmark_serving 0.6.3 draws Poisson gaps and saves none; request rate 1000 is nearly all at once)',
                              'gpu_memory_utilization (vLLM default 0.9 assumed)',
                              'max_model_len 91680 from the README\'s serve command, not logged by the runs'])
        base = f'dstack-h100-405b-fp8-tp8-{tag}'
        url = f'https://github.com/{REPO}/blob/{C_RAW}/{p}'
        prec = ('float64 from the file (equal to the charts/qps_output.csv row); median TTFT recomputed from ttfts (numpy-linear) '
                'equal to 1e-6, median TPOT from sum(itls)/(output_len-1) 0.2-0.6% below it (0.6.3 prints (latency-ttft)/(output_len-1); the itls end at the last token), throughput = sum(output_lens)/duration')
        for mk, key, unit in (('ttft_median', 'median_ttft_ms', 'ms'), ('tpot_median', 'median_tpot_ms', 'ms'),
                              ('output_throughput', 'output_throughput', 'tok/s')):
            figs.append(dict(id=f'{base}-{mk.replace("_", "-")}', source=SRC, ref=f'{p}, field {key}', revision=C_RAW, url=url,
                             metric=mk, unit=unit, value=d[key], read='printed', precision=prec, verified=True,
                             use='cross-check' if mk == 'ttft_median' else 'holdout',
                             use_note=(ttft_note(d) if mk == 'ttft_median' else HOLDOUT_NOTE),
                             setup=setup))
    src = dict(id=SRC, title='dstackai/benchmarks, "8xH100 Benchmark with Llama3.1-405B-Fp8": vLLM 0.6.3 (nightly) benchmark_serving '
                             'results, meta-llama/Llama-3.1-405B-FP8 TP 8 on 8x H100 SXM5, ShareGPT 1,000 prompts at 16, 32 and 1000 req/s, '
                             'server flags per run in charts/qps_output.csv',
               url=f'https://github.com/{REPO}/tree/{C_RAW}/nvidia/8xh100', revision=f'{C_RAW} (result files); {C_HEAD} (README, qps_output.csv)',
               licence='Apache-2.0 (trimmed copies in calib/testdata/bench)')
    write(pub, src, figs)
    for name, p, b, size in copies:
        print(f'| `{name}` | {REPO} | `{p}` | `{C_RAW[:12]}` | `{b[:12]}` | Apache-2.0 | {size:,} |')
    print(f'{len(figs)} figures, {len(copies)} copies, {sum(c[3] for c in copies):,} bytes; CSV {url_csv}', file=sys.stderr)


def emit(figs):
    """The figures in published.yaml's style; a long value that repeats is written once (&dsN) and aliased after."""
    seen, anchors, out = {}, {}, []

    def sc(v):
        if not isinstance(v, str):
            return num(v)
        if len(v) >= 60 and seen.get(v, 0) > 1:
            if v in anchors:
                return '*' + anchors[v]
            anchors[v] = f'ds{len(anchors) + 1}'
            return f'&{anchors[v]} {q(v)}'
        return q(v)

    def count(v):
        if isinstance(v, str) and len(v) >= 60:
            seen[v] = seen.get(v, 0) + 1
    for f in figs:
        for k, v in f.items():
            if k not in ('id', 'setup'):
                count(v)
        for k, v in f['setup'].items():
            count(v) if k != 'workload' else [count(x) for x in v.values()]
        count(json.dumps(f['setup']['unknown']))
    for f in figs:
        lines = [f'  - id: {q(f["id"])}']
        for k in ('source', 'ref', 'revision', 'url', 'metric', 'unit', 'value', 'read', 'precision', 'verified', 'use', 'use_note'):
            lines.append(f'    {k}: {sc(f[k])}')
        s = f['setup']
        lines.append('    setup:')
        for k in ('model', 'gpu', 'gpus', 'tp', 'engine', 'engine_version', 'dtype', 'weight_dtype', 'unquantized', 'kv_dtype', 'options', 'gpu_note'):
            lines.append(f'      {k}: {sc(s[k])}')
        lines.append('      workload:')
        for k in sorted(s['workload']):
            lines.append(f'        {k}: {sc(s["workload"][k])}')
        key = json.dumps(s['unknown'])
        if key in anchors:
            lines.append(f'      unknown: *{anchors[key]}')
        else:
            anchors[key] = f'ds{len(anchors) + 1}'
            lines.append(f'      unknown: &{anchors[key]}')
            lines += [f'        - {q(u)}' for u in s['unknown']]
        out.append('\n'.join(lines) + '\n')
    return ''.join(out)


def write(pub, src, figs):
    head, sep, tail = pub.partition('\nfigures:\n')
    assert sep, 'no figures: key'
    entry = f'  - id: {q(src["id"])}\n' + ''.join(f'    {k}: {q(src[k])}\n' for k in ('title', 'url', 'revision', 'licence'))
    body = tail if tail.endswith('\n') else tail + '\n'
    with open(PUB, 'w') as f:
        f.write(head + '\n' + entry.rstrip('\n') + sep + body + emit(figs))


if __name__ == '__main__':
    main()
