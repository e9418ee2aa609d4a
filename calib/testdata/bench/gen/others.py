"""Figures of the other new sources (issue 24 item 3), read from the mirror snapshots where stored
(crusoe, surajssd, philschmid, ROCm, vLLM blog) and from the values re-read with read_file for the
rest (Lambda, SGLang README, MLPerf logs; search excerpts for NIM and Red Hat)."""
import json, os, re, statistics as st, subprocess
from common import git, gitb, blob, pct, summarise, REPO_ROOT

BENCH = os.path.join(REPO_ROOT, 'calib', 'testdata', 'bench')
COPIES = []  # (local name, repo, path, commit, blob, licence, what)


def lens_copy(mirror, repo, path, commit, name, licence='Apache-2.0'):
    """A trimmed copy of a vLLM --save-result file: the run's metadata and its length arrays only."""
    d = json.loads(gitb(mirror, 'show', f'{commit}:{path}'))
    keep = ['date', 'backend', 'model_id', 'tokenizer_id', 'num_prompts', 'request_rate', 'burstiness', 'max_concurrency',
            'duration', 'completed', 'total_input_tokens', 'total_output_tokens', 'input_lens', 'output_lens']
    out = {k: d[k] for k in keep if k in d}
    os.makedirs(BENCH, exist_ok=True)
    with open(f'{BENCH}/{name}', 'w') as f:
        f.write(json.dumps(out))
    COPIES.append((name, repo, path, commit, blob(mirror, commit, path), licence,
                   'modified: keys ' + ', '.join(k for k in keep if k in d) + ' only, written by json.dumps on one line'))
    return f'calib/testdata/bench/{name}'


# ---------------------------------------------------------------- crusoe-l40s (holdout)
def crusoe():
    M, REPO, C = 'crusoecloud+crusoe-cookbook', 'crusoecloud/crusoe-cookbook', '8e3fc6e7741d0b6334c1b79b322509a79b3b0da6'
    note = ('Crusoe is never fitted: its L40S (Ada, PCIe, GDDR6) runs with FP8 weights and 70B TP 4/8 over PCIe are judged out '
            'of sample as a whole source (calib/README.md, "Fit, hold out, cross-check")')
    figs = []
    for p in git(M, 'ls-tree', '-r', '--name-only', C, 'content/vllm-l40s-fp8/raw_data').split():
        d = json.loads(gitb(M, 'show', f'{C}:{p}'))
        s = summarise(d)
        assert abs(s['re_median_ttft_ms'] - d['median_ttft_ms']) < 1e-6, p
        # vLLM 0.5.5's TPOT is (latency - ttft)/(out-1) per request; recompute it from ttfts and itls.
        ol, tt, itl = d['output_lens'], d['ttfts'], d['itls']
        tp_ = [sum(itl[i]) / (ol[i] - 1) for i in range(len(ol)) if ol[i] > 1]
        re_tpot = pct(tp_, 0.5) * 1000
        assert abs(re_tpot / d['median_tpot_ms'] - 1) < 0.002, (p, re_tpot, d['median_tpot_ms'])
        assert d['completed'] == d['num_prompts'] == len(ol) and min(ol) > 0, p
        re_thr = sum(ol) / d['duration']
        assert abs(re_thr / d['output_throughput'] - 1) < 1e-9, p
        mid = d['model_id']
        fp8 = 'FP8' in mid
        big = '70B' in mid
        tp = (4 if fp8 else 8) if big else 1
        rate = d['request_rate']
        short = mid.split('/')[1].lower().replace('meta-llama-', 'llama-').replace('-instruct', '')
        name = f'crusoe-l40s-{short}-tp{tp}-qps{rate:g}.lens.json'
        lc = lens_copy(M, 'crusoecloud/crusoe-cookbook', p, C, name)
        url = f'https://github.com/{REPO}/blob/{C}/{p}'
        opts = ('vllm serve $MODEL --enable-chunked-prefill --disable-log-requests --tensor-parallel-size ' + str(tp) +
                ' (README); client benchmarks/benchmark_serving.py of the folder (vLLM 0.5.5), --save-result')
        if fp8:
            opts += ('; FP8-dynamic checkpoint (neuralmagic, compressed-tensors): FP8 weights, activations quantised to FP8 per '
                     'token at run time (W8A8 on FP8 tensor cores)')
        w = dict(arrival='poisson', burstiness=1.0, chunked_prefill=True, prefix_caching=False, ignore_eos=False,
                 dataset='sonnet (benchmark_serving.py --dataset-name sonnet --sonnet-input-len 550 --sonnet-output-len 150, '
                         'default --sonnet-prefix-len 200; chat template applied)',
                 lengths=f'input_lens/output_lens in the file (input mean {s["in_mean"]:.1f}, min {s["in_min"]}, max {s["in_max"]}; '
                         f'output mean {s["out_mean"]:.1f}, max {s["out_max"]})',
                 local_copy=lc, num_prompts=d['num_prompts'], request_rate=float(rate), max_num_batched_tokens=512,
                 notes='num_prompts = 120 s x QPS (run_benchmark.sh); max_num_batched_tokens 512 is vLLM 0.5.5\'s default '
                       'under --enable-chunked-prefill (SchedulerConfig), not logged by the run' +
                       ('; overloaded from 5 QPS on (TTFT of tens of seconds): throughput is the saturation rate' if big and rate >= 5 else ''))
        setup = dict(model=mid, gpu='l40s-48g', gpus=tp, tp=tp, engine='vllm-v0', engine_version='0.5.5 (uv.lock of the folder)',
                     dtype='bf16', weight_dtype='fp8' if fp8 else None, kv_dtype='bf16', options=opts,
                     gpu_note='Crusoe VM l40s-48gb.8x: 8x L40S 48 GB on PCIe (no NVLink); TP 1 for 8B, 8 for 70B BF16, 4 for 70B FP8 (README)',
                     workload=w,
                     unknown=['max_num_seqs and gpu_memory_utilization (vLLM defaults 256 and 0.9 assumed)',
                              'arrival times (benchmark_serving 0.5.5 draws Poisson gaps without a seed and saves none)',
                              'max_num_batched_tokens (not logged; 512 is the 0.5.5 default under chunked prefill)'])
        prec = 'float64 from the file; median TTFT recomputed from ttfts (numpy-linear) equal to 1e-6, median TPOT from ' \
               'sum(itls)/(output_len-1) within 0.2% (0.5.5 prints (latency-ttft)/(output_len-1)), throughput = sum(output_lens)/duration'
        base = f'crusoe-l40s-{short}-tp{tp}-qps{rate:g}'
        for mk, key, unit in (('ttft_median', 'median_ttft_ms', 'ms'), ('tpot_median', 'median_tpot_ms', 'ms'),
                              ('output_throughput', 'output_throughput', 'tok/s')):
            figs.append(dict(id=f'{base}-{mk.replace("_", "-")}', source='crusoe-l40s', ref=f'{p}, field {key}', revision=C, url=url,
                             metric=mk, unit=unit, value=d[key], read='printed', precision=prec, verified=True, use='holdout',
                             use_note=note, setup=setup))
    return figs


# ---------------------------------------------------------------- surajssd (existing source): TP8 qps 4 and the PP2 runs
def surajssd():
    M, REPO, C = 'surajssd+llm-k8s', 'surajssd/llm-k8s', '58b61c59450e06073120a8ad166c1e9c333851a7'
    base = 'results_serving_meta-llama-Llama-3.3-70B-Instruct'
    figs = []
    sel = [('01_tp8_pp1', 'tp8_pp1', ['04'])] + [(d_, 'tp4_pp2', ['01', '04', '16', 'inf']) for d_ in ('02_tp4_pp2_no_IB', '03_tp4_pp2_IB')]
    for d_, tag, qs in sel:
        for q_ in qs:
            p = f'{base}/{d_}/serving_meta-llama-Llama-3.3-70B-Instruct_{tag}_sharegpt_qps_{q_}.json'
            d = json.loads(gitb(M, 'show', f'{C}:{p}'))
            s = summarise(d)
            assert abs(s['re_median_ttft_ms'] - d['median_ttft_ms']) < 1e-6 and abs(s['re_median_tpot_ms'] / d['median_tpot_ms'] - 1) < 1e-6, p
            pp = 'pp2' in tag
            url = f'https://github.com/{REPO}/blob/58b61c59450e/{p}'
            rate = float(d['request_rate']) if d['request_rate'] != 'inf' else float('inf')
            w = dict(arrival='poisson' if rate != float('inf') else 'all at once', burstiness=1.0,
                     dataset='sharegpt (benchmark_serving sampling)', lengths=f'input_lens/output_lens in the file (in {sum(d["input_lens"]):,} tokens, mean {st.mean(d["input_lens"]):.1f})',
                     num_prompts=d['num_prompts'], prefix_caching=True, request_rate=rate)
            if pp:
                use, unote = 'cross-check', ('pipeline parallelism (TP 4 x PP 2 over two nodes) is not modelled: the simulator has tensor '
                                             'parallelism only; these runs show the cross-node PP cost (TPOT 44 ms at 1 req/s against 24.5 for TP 8)')
                setup = dict(model='meta-llama/Llama-3.3-70B-Instruct', gpu='a100-40g', gpus=8, tp=4, engine='vllm-v0',
                             engine_version='0.8.3 (V0: the server log in lws-run-*.sh says "Pipeline Parallelism without Ray distributed executor is not supported by the V1 Engine. Falling back to V0")',
                             dtype='bf16', kv_dtype='bf16',
                             options='TP 4 x PP 2 across two ND96asr_v4 nodes (LeaderWorkerSet, Ray), chunked prefill on, prefix caching on (server log), ' +
                                     ('GPUDirect RDMA over InfiniBand' if '_IB' in d_ and 'no_IB' not in d_ else 'no InfiniBand (TCP between nodes)'),
                             gpu_note='Azure ND96asr_v4 (8x A100-SXM4-40GB per node), two nodes x 4 GPUs', workload=w,
                             unknown=['max_num_batched_tokens (not in the log excerpt)'])
                tagid = 'tp4-pp2-' + ('ib' if 'no_IB' not in d_ else 'no-ib')
            else:
                w['local_copy'] = lens_copy(M, REPO, p, C, f'surajssd-llama-3.3-70b-tp8-sharegpt-qps-{q_}.lens.json')
                w['warm_from'] = 'shared/data/bench/surajssd__llm-k8s__results_serving_meta-llama-Llama-3.3-70B-Instruct__01_tp8_pp1__serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_01.json'
                w['notes'] = ('the 4 req/s run of the same series as the qps 1/16/inf figures (dates 20250414-141505, -141621, -141706, '
                              '-141743): the same 200 prompts to the same server with prefix caching, after the 1 req/s run')
                use, unote = 'fit', 'surajssd is a fitted source: its 4 req/s run (not in the dataset before) is fitted with its qps 1 and inf runs'
                setup = dict(model='meta-llama/Llama-3.3-70B-Instruct', gpu='a100-40g', gpus=8, tp=8, engine='vllm-v1',
                             engine_version='0.8.3 (V1 by default for TP without PP; no server log of the TP 8 runs is committed)',
                             dtype='bf16', kv_dtype='bf16', options='vllm/vllm-openai:v0.8.3, --enable-prefix-caching',
                             gpu_note='Azure ND96asr_v4: 8x A100-SXM4-40GB (NVLink)', workload=w,
                             unknown=['engine V0 or V1 (0.8.3 defaults to V1 here; the existing surajssd figures and the harness take V0 with '
                                      'chunked prefill at 2,048 tokens, as the PP runs logged)',
                                      'max_num_batched_tokens'])
                tagid = 'tp8'
            for mk, key, unit in (('ttft_median', 'median_ttft_ms', 'ms'), ('tpot_median', 'median_tpot_ms', 'ms'),
                                  ('output_throughput', 'output_throughput', 'tok/s')):
                figs.append(dict(id=f'surajssd-70b-{tagid}-a100-40g-qps-{q_}-{mk.replace("_", "-")}', source='surajssd-llm-k8s',
                                 ref=f'{p}, field {key}', revision='58b61c59450e', url=url, metric=mk, unit=unit, value=d[key],
                                 read='computed' if mk != 'output_throughput' else 'printed',
                                 precision='float64 from the file; recomputed from the per-request arrays (numpy-linear percentiles, TPOT = sum(itls)/(output_len-1)) and equal to the stored summary to 1e-6',
                                 verified=True, use=use, use_note=unote, setup=setup))
    return figs


# ---------------------------------------------------------------- SGLang v0.3.0 vs vLLM v0.6.0 README (read_file, verified)
def sglang_bench():
    REPO, P, C = 'sgl-project/sglang', 'benchmark/benchmark_vllm_060/README.md', '120affb9613cc3f5bcd055ec09c7621d3ced0ebc'
    url = f'https://github.com/{REPO}/blob/{C}/{P}'
    online = {('8b', 'SGLang'): [(4, 1200, 31.98, 13.17), (8, 2400, 35.68, 17.85)],
              ('8b', 'vLLM'): [(4, 1200, 100.48, 14.14), (8, 2400, 120.39, 17.09)],
              ('70b', 'SGLang'): [(4, 1200, 53.94, 25.03), (8, 2400, 58.11, 33.07)],
              ('70b', 'vLLM'): [(4, 1200, 179.15, 23.58), (8, 2400, 207.12, 29.15)]}
    offline = {('8b', 'SGLang'): 4281.51, ('8b', 'vLLM'): 4132.37, ('70b', 'SGLang'): 3856.01, ('70b', 'vLLM'): 3700.64}
    figs = []

    def setup(sz, eng, w):
        big = sz == '70b'
        if eng == 'SGLang':
            e, ev = 'sglang', '0.3.0'
            opts = ('python -m sglang.launch_server --model-path meta-llama/Llama-3.1-' + ('70B' if big else '8B') + '-Instruct ' +
                    ('--disable-radix-cache --tp 4' + (' --mem-frac 0.88 (offline)' if 'inf' in str(w.get('request_rate')) else '')
                     if big else '--enable-torch-compile --disable-radix-cache'))
            w = dict(w, prefix_caching=False)
        else:
            e, ev = 'vllm-v0', '0.6.0'
            opts = ('python -m vllm.entrypoints.openai.api_server --disable-log-requests --num-scheduler-steps 10 --max_model_len 4096' +
                    (' --tensor 4' if big else ''))
            w = dict(w, prefix_caching=False, num_scheduler_steps=10, max_model_len=4096, chunked_prefill=False)
        unknown = ['the ShareGPT sample\'s prompt and output lengths (sglang.bench_serving, default seed; not published)',
                   'GPU variant: the README says "1 x A100 80G" / "4 x H100 80G"']
        if e == 'sglang':
            unknown.append('SGLang 0.3.0 scheduler defaults (chunked prefill size, max running requests)')
        gnote = ('"1 x A100 80G": SXM or PCIe not stated; the PCIe part\'s bandwidth (1,935 GB/s) is within 5% of the SXM\'s, so '
                 'the a100-80g preset stands for either' if not big else
                 '"4 x H100 80G": SXM (3.35 TB/s, NVLink) or PCIe (2.0 TB/s) not stated: gpu "h100" (variant unknown), as argonne\'s')
        return dict(model=f'meta-llama/Llama-3.1-{"70B" if big else "8B"}-Instruct', gpu='h100' if big else 'a100-80g',
                    gpus=4 if big else 1, tp=4 if big else 1, engine=e, engine_version=ev, dtype='bf16', kv_dtype='bf16',
                    options=opts, gpu_note=gnote, workload=w, unknown=unknown)

    def use(sz):
        if sz == '70b':
            return 'cross-check', ('H100 variant unknown (SXM or PCIe differ 1.7x in bandwidth): cross-check, as the dataset treats '
                                   'argonne\'s H100 figures')
        return 'fit', 'SGLang 0.3.0 and vLLM 0.6.0 (multi-step 10) on one A100 80GB, from the SGLang repository: a fitted source'

    for (sz, eng), rows in online.items():
        for rps, n, ttft, tpot in rows:
            w = dict(arrival='poisson', dataset='sharegpt (python3 -m sglang.bench_serving --backend ' + eng.lower() +
                     ' --dataset-name sharegpt)', num_prompts=n, request_rate=float(rps))
            u, un = use(sz)
            for mk, v in (('ttft_median', ttft), ('tpot_median', tpot)):
                col = 'Median TTFT' if mk == 'ttft_median' else 'Median TPOT'
                figs.append(dict(id=f'sglang-bench-vllm060-{eng.lower()}-llama-3.1-{sz}-rps{rps}-{mk.replace("_", "-")}',
                                 source='sglang-bench-vllm060',
                                 ref=f'{P}, "Online benchmark results", Llama 3.1 {sz.upper()} Instruct table, RPS {rps} / {eng} row, column {col}',
                                 revision=C, url=url, metric=mk, unit='ms', value=v, read='printed', precision='printed table cell, 2 decimals',
                                 verified=True, use=u, use_note=un, setup=setup(sz, eng, w)))
    for (sz, eng), v in offline.items():
        w = dict(arrival='all at once', dataset='sharegpt (python3 -m sglang.bench_serving --backend ' + eng.lower() +
                 ' --dataset-name sharegpt)', num_prompts=5000, request_rate=float('inf'))
        u, un = use(sz)
        figs.append(dict(id=f'sglang-bench-vllm060-{eng.lower()}-llama-3.1-{sz}-offline-output-throughput', source='sglang-bench-vllm060',
                         ref=f'{P}, "Offline benchmark results", Llama 3.1 {sz.upper()} Instruct table, {eng} row, column Output token throughput',
                         revision=C, url=url, metric='output_throughput', unit='tok/s', value=v, read='printed',
                         precision='printed table cell, 2 decimals', verified=True, use=u, use_note=un, setup=setup(sz, eng, w)))
    return figs


# ---------------------------------------------------------------- Lambda FP8 files (existing source; read_file)
def lambda_fp8():
    REPO, C = 'LambdaLabsML/vllm-benchmark', 'a4f9f4371a1ccac781293837fce2bce0cc6d25cc'
    runs = [('results/prompt_10/1xH100-80GB-SXM/Meta-Llama-3.1-8B-FP8_tp1_len2048.json', 1, 'neuralmagic/Meta-Llama-3.1-8B-FP8', 10,
             dict(ttft=62.47698800143553, tpot=5.198485823815636, thr=413.89429359863317), '3 of 10', '20240907-082634'),
            ('results/prompt_320/1xH100-80GB-SXM/Meta-Llama-3.1-8B-FP8_tp1_len2048.json', 1, 'neuralmagic/Meta-Llama-3.1-8B-FP8', 320,
             dict(ttft=1151.2132194984588, tpot=13.370061736684779, thr=5723.953457553819), 'about a third (output_lens 0)', '20240907-085901'),
            ('results/prompt_1280/1xH100-80GB-SXM/Meta-Llama-3.1-8B-FP8_tp1_len2048.json', 1, 'neuralmagic/Meta-Llama-3.1-8B-FP8', 1280,
             dict(ttft=4232.581203999871, tpot=43.07672945970425, thr=8113.927991023355), 'about a third (output_lens 0)', '20240907-091305'),
            ('results/prompt_320/2xH100-80GB-SXM/Meta-Llama-3.1-70B-Instruct-FP8_tp2_len2048.json', 2, 'neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8', 320,
             dict(ttft=3567.204518985818, tpot=48.389508008453525, thr=2352.4161718582404), 'about a tenth (output_lens 0)', '20240907-102327')]
    figs = []
    for p, tp, model, n, v, fails, date in runs:
        url = f'https://github.com/{REPO}/blob/{C}/{p}'
        m = re.match(r'results/prompt_(\d+)/(\d)xH100-80GB-SXM/(.+)_tp(\d)_len(\d+)\.json', p)
        base = f'lambda-p{m.group(1)}-{m.group(2)}xh100-{m.group(3).lower()}-tp{m.group(4)}-len{m.group(5)}'
        unote = (f'the run counts failed requests (output_len 0, TTFT 0.0) as completed: {fails} failed here, so the printed median TTFT '
                 'and throughput mix in zeros (the fitted Lambda runs have 0-2 of 10); the rule of the source: a run with 30% or more failures, '
                 'or whose lengths are not cited (over 10 prompts: calib/fidelity_lambda.go), is cross-check')
        setup = dict(model=model, gpu='h100-80g', gpus=tp, tp=tp, engine='vllm-v0',
                     engine_version='0.6.0 (inferred: run 2024-09-07; the README of that period sets vLLM_BUILD=v0.6.0, NUM_SCHEDULER_STEPS=10; stream chunks of ~10 tokens)',
                     dtype='bf16', weight_dtype='fp8', kv_dtype='bf16',
                     options='neuralmagic FP8 checkpoint (static per-tensor FP8 weights and activations); ' + ('base model, not Instruct' if 'Instruct' not in model else 'Instruct'),
                     workload=dict(arrival='all at once', burstiness=1.0, dataset='sharegpt (vLLM benchmark_serving sampling, seed 0)',
                                   lengths='input_lens/output_lens in the file (not copied: the repository has no licence)', num_prompts=n,
                                   num_scheduler_steps=10, max_model_len=int(m.group(5)), request_rate=float('inf'),
                                   notes=f'run date {date}; completed {n}, failures counted as completed: {fails}'),
                     unknown=['max_num_seqs (benchmark.py default 1024 or 256)', 'max_num_batched_tokens', 'prefix caching (engine default)'])
        for mk, k, key, unit in (('ttft_median', 'ttft', 'median_ttft_ms', 'ms'), ('tpot_median', 'tpot', 'median_tpot_ms', 'ms'),
                                 ('output_throughput', 'thr', 'output_throughput', 'tok/s')):
            figs.append(dict(id=f'{base}-{mk.replace("_", "-")}', source='lambda-vllm-benchmark', ref=f'{p}, field {key}', revision=C, url=url,
                             metric=mk, unit=unit, value=v[k], read='printed', precision='as stored in the JSON (float64)', verified=True,
                             use='cross-check', use_note=unote, setup=setup))
    return figs


# ---------------------------------------------------------------- MLPerf Inference v4.1 AMD (read_file, verified)
def mlperf():
    REPO, C = 'mlcommons/inference_results_v4.1', 'a2f5d66d17e8f75c02fd74dfe810ecca6a046696'
    ml = [('1xMI300X_2xEPYC-9374F', 'llama2-70b-99.9', 'Offline', 1, dict(tps=3062.72, qps=10)),
          ('1xMI300X_2xEPYC-9374F', 'llama2-70b-99.9', 'Server', 1, dict(tps=2520.27, ttft=411.053102, tpot=156.937729, qps=8.6)),
          ('8xMI300X_2xEPYC-9374F', 'llama2-70b-99', 'Offline', 8, dict(tps=23514.8, qps=80)),
          ('8xMI300X_2xEPYC-9374F', 'llama2-70b-99', 'Server', 8, dict(tps=21028.23, ttft=990.199455, tpot=143.943044, qps=73.5)),
          ('8xMI300X_2xEPYC-TURIN', 'llama2-70b-99', 'Offline', 8, dict(tps=24109.8, qps=83)),
          ('8xMI300X_2xEPYC-TURIN', 'llama2-70b-99', 'Server', 8, dict(tps=22020.92, ttft=1027.109148, tpot=146.864683, qps=76))]
    figs = []
    for sysn, bench, scen, n, v in ml:
        P = f'closed/AMD/results/{sysn}/{bench}/{scen}/performance/run_1/mlperf_log_summary.txt'
        url = f'https://github.com/{REPO}/blob/{C}/{P}'
        base = f'mlperf-v4.1-amd-{sysn.lower().replace("_2xepyc-", "-")}-{bench}-{scen.lower()}'
        w = dict(dataset='MLPerf llama2-70b (OpenOrca, 24,576-sample performance set)',
                 arrival='MLPerf Server: Poisson at target_qps' if scen == 'Server' else 'MLPerf Offline: all samples at once',
                 request_rate=float(v['qps']) if scen == 'Server' else float('inf'),
                 slo='TTFT p99 <= 2 s, TPOT p99 <= 200 ms' if scen == 'Server' else None,
                 notes=f'target_qps {v["qps"]} (Test Parameters Used); min duration 600 s')
        setup = dict(model='meta-llama/Llama-2-70b-chat-hf', gpu='mi300x-192g', gpus=n, tp=1, engine='vllm-v0',
                     engine_version='AMD\'s MLPerf v4.1 harness on a ROCm vLLM fork of 2024 (version not stated in the logs)',
                     dtype='fp16', weight_dtype='fp8', kv_dtype='fp8',
                     options='Quark w_fp8_a_fp8_o_fp8 (closed/AMD/code/llama2-70b-99/README.md); ' + ('8 GPUs: presumably 8 single-GPU instances' if n > 1 else '1 GPU'),
                     gpu_note=f'{sysn}: {n}x MI300X 192 GB', workload=w,
                     unknown=['vLLM version and engine (ROCm fork)', 'TP per instance (70B FP8 fits one 192 GB GPU)', 'output lengths (MLPerf reference outputs, about 293 tokens a sample)'])
        un = 'AMD MI300X with a ROCm vLLM fork: no MI300X preset and no ROCm engine are modelled, so shown, never counted'
        items = [('output_throughput', 'tok/s', v['tps'], 'Completed tokens per second' if scen == 'Server' else 'Tokens per second')]
        if scen == 'Server':
            items += [('ttft_median', 'ms', v['ttft'], '50.00 percentile first token latency (ns), / 1e6'),
                      ('tpot_median', 'ms', v['tpot'], '50.00 percentile time to output token (ns), / 1e6')]
        for mk, unit, val, field in items:
            figs.append(dict(id=f'{base}-{mk.replace("_", "-")}', source='mlperf-inf-v4.1-amd', ref=f'{P}, {field}', revision=C, url=url,
                             metric=mk, unit=unit, value=val, read='printed' if mk == 'output_throughput' else 'computed',
                             precision='printed (tokens/s, 2 decimals)' if mk == 'output_throughput' else 'printed in ns, converted to ms exactly',
                             verified=True, use='cross-check', use_note=un, setup=setup))
    return figs


# ---------------------------------------------------------------- ROCm vLLM dev-docker README: static-batch latencies
def rocm_rows():
    """The latency tables of ROCm/vllm docs/dev-docker/README.md, one README commit per release."""
    M, P = 'ROCm+vllm', 'docs/dev-docker/README.md'
    seen, rows = {}, []
    for ln in git(M, 'log', '--all', '--format=%H %ad', '--date=short', '--', P).splitlines():
        c, date = ln.split()
        try:
            t = git(M, 'show', f'{c}:{P}')
        except subprocess.CalledProcessError:
            continue  # a commit that deleted or moved the file
        m = re.search(r'vLLM v?([0-9]+\.[0-9]+\.[0-9]+[a-z0-9.+]*)', t, re.I)
        if not m or m.group(1) in seen:
            continue
        seen[m.group(1)] = c
        section, model, last_tp = None, None, None
        for n, line in enumerate(t.splitlines(), 1):
            if line.startswith('### Latency Measurements') or line.startswith('## Latency Measurements'):
                section = 'lat'
            elif line.startswith('### Throughput Measurements') or line.startswith('## Reproducing'):
                section = None
            if not line.startswith('|') or section is None:
                continue
            cells = [x.strip() for x in line.strip().strip('|').split('|')]
            if cells[0].startswith('Llama'):
                model = re.search(r'Llama 3\.1 (\d+B)', cells[0]).group(1)
            elif cells[0].startswith('Model') or cells[0].startswith('-'):
                continue
            try:
                prec, tp, bs, inp, out, val = cells[1:7]
                tp = tp or last_tp
                last_tp = tp
                rows.append(dict(version=m.group(1), commit=c, date=date, line=n, kind='latency', model=model, tp=int(tp),
                                 batch=int(bs), input=int(inp), output=int(out), value=float(val)))
            except (ValueError, IndexError):
                pass
    return rows


def rocm():
    rows = rocm_rows()
    figs = []
    v1 = {'0.9.1', '0.10.0'}
    for r in rows:
        if r['model'] != '70B' or r['kind'] != 'latency' or r['version'] == '0.8.3':
            continue
        ver = r['version']
        eng = 'vllm-v1' if ver in v1 else 'vllm-v0'
        url = f'https://github.com/ROCm/vllm/blob/{r["commit"]}/docs/dev-docker/README.md'
        setup = dict(model='amd/Llama-3.1-70B-Instruct-FP8-KV', gpu='mi300x-192g', gpus=8, tp=8, engine=eng,
                     engine_version=f'{ver} (ROCm fork, rocm/vllm-dev image of {r["date"]}; {"V1" if eng == "vllm-v1" else "V0"})',
                     dtype='bf16', weight_dtype='fp8', kv_dtype='fp8',
                     options='benchmarks/benchmark_latency.py (fixed lengths, static batch; 3 warm-up + 5 timed iterations, mean)',
                     gpu_note='Supermicro AS-8125GS-TNMR2, 2x EPYC 9554, 8x MI300X 192 GB 750 W',
                     workload=dict(batch=r['batch'], input_len=r['input'], output_len=r['output'], ignore_eos=True, num_iters=5,
                                   dataset='static (benchmark_latency.py dummy prompts of fixed length)'),
                     unknown=['max_num_batched_tokens and chunked prefill of the build'])
        figs.append(dict(id=f'rocm-devdocker-v{ver}-70b-fp8-tp8-b{r["batch"]}-in{r["input"]}-out{r["output"]}-latency',
                         source='rocm-vllm-devdocker', ref=f'docs/dev-docker/README.md, line {r["line"]} (Latency table: batch {r["batch"]}, input {r["input"]}, output {r["output"]})',
                         revision=r['commit'], url=url, metric='e2e_latency_mean', unit='s', value=r['value'], read='printed',
                         precision='printed table cell (3 decimals)', verified=True, use='cross-check',
                         use_note='AMD MI300X with the ROCm vLLM fork: no MI300X preset and no ROCm engine are modelled, so shown, never counted; '
                                  'one machine across six releases (V0 multi-step to V1)',
                         setup=setup))
    return figs


# ---------------------------------------------------------------- vLLM blog FP8 KV cache (mirror)
def vllm_blog():
    M, C, P = 'vllm-project+vllm-project.github.io', 'c3a01c4a5807c8d900ae468897e45263373e534e', '_posts/2026-04-22-fp8-kvcache.md'
    t = git(M, 'show', f'{C}:{P}').splitlines()
    ln = next(i for i, s in enumerate(t, 1) if s.startswith('| BF16 | 763.6'))
    assert t[ln - 1] == '| BF16 | 763.6 | 15.18 | 672.6 | 450.3 |' and t[ln] == '| FP8 | 742.8 | 12.93 | 585.2 | 517.5 |'
    url = f'https://github.com/vllm-project/vllm-project.github.io/blob/{C}/{P}'
    figs = []
    for row, kv, ttft, itl, thr in ((ln, 'bf16', 763.6, 15.18, 450.3), (ln + 1, 'fp8', 742.8, 12.93, 517.5)):
        setup = dict(model='meta-llama/Llama-3.1-8B-Instruct', gpu='h100-80g', gpus=1, tp=1, engine='vllm-v1',
                     engine_version='0.19.1 (the post\'s "after" build, Table 3; Table 4\'s build is not named)', dtype='bf16', kv_dtype=kv,
                     options='vllm bench serve; FlashAttention-3 backend' + (' with --kv-cache-dtype fp8 (e4m3; attention in FP8, two-level accumulation)' if kv == 'fp8' else ''),
                     gpu_note='"a single H100 GPU": the variant is not named; SXM (h100-80g) inferred from the batch-1 ITL intercept of 6.44 ms, '
                              'below the 8.0 ms a PCIe H100 (2.0 TB/s) needs to read 16 GB of BF16 weights once',
                     workload=dict(max_concurrency=8, num_prompts=150, input_len=20000, output_len=2000,
                                   lengths='"each with ~20k input tokens and ~2k output tokens (±15% variance)"; output tok/s x duration = 302,872 '
                                           '(BF16) and 302,840 (FP8) tokens, 2,019 a request',
                                   dataset='synthetic long-context prompts (dataset of vllm bench serve not named)'),
                     unknown=['whether the model is Instruct (the post says Llama-3.1-8B)', 'dataset and length distribution (±15%: a range ratio?)',
                              'ignore_eos', 'max_model_len, max_num_batched_tokens, max_num_seqs', 'H100 variant (SXM inferred)'])
        un = 'never fitted: the vLLM team\'s own V1 measurement with ~20k-token prompts and an FP8 KV cache, judged as a whole source'
        for mk, unit, val, col in (('ttft_median', 'ms', ttft, 'Median TTFT (ms)'), ('itl_median', 'ms', itl, 'Median ITL (ms)'),
                                   ('output_throughput', 'tok/s', thr, 'Output tok/s')):
            figs.append(dict(id=f'vllm-blog-fp8kv-llama-3.1-8b-{kv}-kv-c8-{mk.replace("_", "-")}', source='vllm-blog-fp8kv',
                             ref=f'{P}, Table 4 (line {row}), {kv.upper()} row, column {col}', revision=C, url=url, metric=mk, unit=unit,
                             value=val, read='printed', precision='printed table cell (1-2 decimals)', verified=True, use='holdout',
                             use_note=un + ('; median ITL is given, not TPOT (one token per chunk in V1)' if mk == 'itl_median' else ''),
                             setup=setup))
    return figs


# ---------------------------------------------------------------- NVIDIA NIM docs (search excerpt; output throughput only)
def nim():
    URL = 'https://docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance'
    figs = []
    for c, ttft, itl, thr in ((1, 406.77, 18.58, 51.67), (5, 546.7, 21.83, 218.48), (25, 688.69, 38.75, 623.4), (50, 834.51, 59.73, 814.37),
                              (100, 7996.25, 92.91, 917.26), (150, 34794.22, 92.86, 920.9), (200, 61680.22, 93.06, 920.54), (250, 88605.32, 93.2, 920.12)):
        setup = dict(model='meta-llama/Llama-3.3-70B-Instruct', gpu='h100', gpus=2, tp=2, engine='nim',
                     engine_version='NIM container llama-3.3-70b-instruct 1.8.0 (backend profile not stated)', dtype='bf16', weight_dtype='fp8',
                     options='NIM profile "fp8 TP2"', gpu_note='"2 x H100 80G": variant not stated',
                     workload=dict(max_concurrency=c, input_len=5000, output_len=500, dataset='synthetic (AIPerf)',
                                   notes=f'the same row gives TTFT {ttft} ms and ITL {itl} ms, statistic (mean or median) not stated: not recorded'),
                     unknown=['KV cache dtype', 'serving backend (TRT-LLM or vLLM)', 'number of requests', 'ignore_eos'])
        figs.append(dict(id=f'nim-1.8.0-llama-3.3-70b-fp8-tp2-in5000-out500-c{c}-output-throughput', source='nim-benchmarking-docs',
                         ref='Performance page, Llama-3.3-70b-instruct, Version 1.8.0, 2 x H100 80G, fp8 TP2, 5000 Input Tokens / 500 Output Tokens, '
                             f'Concurrency {c}, column Throughput(Tokens/s)',
                         revision='documentation version 1.0.0 (page as stored)', url=URL, metric='output_throughput', unit='tok/s', value=thr,
                         read='printed', precision='printed table cell, 2 decimals; output tokens (at concurrency 1: 500 / (0.40677 + 499 x 0.01858 s) = 51.65)',
                         verified=False, verify_note='only the search excerpt of the docs page was seen here (it shows the whole table)',
                         use='cross-check', use_note='NVIDIA NIM, not vLLM or SGLang, and an H100 of unstated variant: shown, never counted',
                         setup=setup))
    return figs


# ---------------------------------------------------------------- Red Hat MLPerf v5.1 blog (search excerpt)
def redhat():
    URL = 'https://www.redhat.com/en/blog/efficient-and-reproducible-llm-inference-red-hat-mlperf-inference-v51-results'
    figs = []
    for gpu, gname, scen, v in (('h100', 'H100', 'Offline', 5777), ('h100', 'H100', 'Server', 5103), ('l40s-48g', 'L40S', 'Offline', 1642),
                                ('l40s-48g', 'L40S', 'Server', 1207)):
        setup = dict(model='meta-llama/Llama-3.1-8B-Instruct', gpu=gpu, gpus=1, tp=1, engine='vllm-v1', engine_version='0.10.0',
                     dtype='bf16', weight_dtype='fp8', options='RHEL 9.6; FP8-quantised Llama 3.1-8B (MLPerf v5.1 llama3.1-8b, closed division)',
                     gpu_note='"a single H100 GPU": variant not stated in the excerpt' if gpu == 'h100' else 'a single L40S',
                     workload=dict(dataset='MLPerf llama3.1-8b (CNN/DailyMail summarisation)',
                                   arrival='MLPerf Server: Poisson at the target rate' if scen == 'Server' else 'MLPerf Offline: all samples at once',
                                   request_rate=float('inf') if scen == 'Offline' else None),
                     unknown=['target QPS and latency constraints of the Server run', 'KV cache dtype', 'vLLM server settings',
                              'the submission logs (mlcommons/inference_results_v5.1, not in this index)'])
        figs.append(dict(id=f'redhat-mlperf-v5.1-llama-3.1-8b-fp8-{gname.lower()}-{scen.lower()}-output-throughput', source='redhat-mlperf-v5.1-blog',
                         ref=f'Executive summary: "{v} tokens/sec ({scen}) on a single {gname} GPU"', revision='page as stored (mirror of the blog)',
                         url=URL, metric='output_throughput', unit='tok/s', value=v, read='printed', precision='printed integer tokens/s',
                         verified=False, verify_note='only a search excerpt of a mirror of the blog was seen; the submission logs are not in this index',
                         use='holdout', use_note='never fitted: Red Hat\'s MLPerf v5.1 runs (vLLM 0.10.0, FP8) judged as a whole source',
                         setup=setup))
    return figs


# ---------------------------------------------------------------- philschmid/llmperf A10G (mirror)
def philschmid():
    M, REPO, C = 'philschmid+llmperf', 'philschmid/llmperf', '5c1c321e95061fc20304eb882cb9653a88bc7b9c'
    figs = []
    un = ('never fitted: llmperf sweeps on AWS A10G (g5) with vLLM 0.4.3, judged as a whole source; llmperf\'s inter-token latency '
          '(the whole request time, TTFT included, over output tokens) is not recorded')
    unit_thr = 'tok/s (llmperf tokens)'
    thr_prec = ('printed; llmperf counts output tokens with its own Llama-2 tokenizer (hf-internal-testing/llama-tokenizer), not the '
                'model\'s: the unit says so, and the simulator does not convert it')
    p = 'benchmarks/results/a10g/vllm-meta-llama_Meta-Llama-3-8B-Instruct.csv'
    lines = [l.split(',') for l in gitb(M, 'show', f'{C}:{p}').decode().splitlines()]
    tab = {l[0]: l[1:] for l in lines}
    url = f'https://github.com/{REPO}/blob/{C}/{p}'
    for i, c in enumerate(tab['concurrency']):
        c = int(float(c))
        setup = dict(model='meta-llama/Meta-Llama-3-8B-Instruct', gpu='a10g-24g', gpus=1, tp=1, engine='vllm-v0',
                     engine_version='0.4.3 (vllm/vllm-openai:v0.4.3, benchmarks/llama_3_8b_instruct_a10g.md)', dtype='bf16', kv_dtype='bf16',
                     options='OpenAI chat API on localhost; llmperf token_benchmark_ray.py', gpu_note='AWS g5.2xlarge: 1x A10G 24 GB',
                     workload=dict(max_concurrency=c, num_prompts=100, ignore_eos=False, max_tokens=150,
                                   dataset='llmperf synthetic prompts (sonnet lines), --mean-input-tokens 550 --stddev-input-tokens 0 --mean-output-tokens 150 --stddev-output-tokens 0',
                                   lengths=f'550 prompt tokens and 150 max output tokens as llmperf counts them (Llama-2 tokenizer); measured output mean {float(tab["mean_output_token_length"][i]):.1f} llmperf tokens',
                                   notes='closed loop: the client keeps max_concurrency requests in flight'),
                     unknown=['prompt length in Llama-3 tokens (llmperf counts 550 with the Llama-2 tokenizer, chat template not included)',
                              'num_prompts (script default 100; the CSV does not give the count)', 'max_num_seqs, max_num_batched_tokens (0.4.3 defaults)'])
        base = f'philschmid-a10g-llama-3-8b-c{c}'
        figs.append(dict(id=f'{base}-ttft-mean', source='philschmid-llmperf-a10g', ref=f'{p}, row first-time-to-token_mean_in_ms_(ttft), concurrency {c}',
                         revision=C, url=url, metric='ttft_mean', unit='ms', value=float(tab['first-time-to-token_mean_in_ms_(ttft)'][i]),
                         read='printed', precision='float64 as in the CSV', verified=True, use='holdout', use_note=un, setup=setup))
        figs.append(dict(id=f'{base}-output-throughput', source='philschmid-llmperf-a10g', ref=f'{p}, row throughput_token_per_s_(token/sec), concurrency {c}',
                         revision=C, url=url, metric='output_throughput', unit=unit_thr, value=float(tab['throughput_token_per_s_(token/sec)'][i]),
                         read='printed', precision=thr_prec, verified=True, use='holdout', use_note=un, setup=setup))
    for c in (1, 2, 4, 8, 16, 32, 64):
        p = f'benchmarks/results/yi/4xa10g/vllm/result_01-ai_Yi-1.5-34B-Chat_{c}/01-ai-Yi-1-5-34B-Chat_550_150_summary.json'
        d = json.loads(gitb(M, 'show', f'{C}:{p}'))
        url = f'https://github.com/{REPO}/blob/{C}/{p}'
        setup = dict(model='01-ai/Yi-1.5-34B-Chat', gpu='a10g-24g', gpus=4, tp=4, engine='vllm-v0', engine_version='0.4.3 (vllm/vllm-openai:v0.4.3)',
                     dtype='bf16', kv_dtype='bf16', options='OpenAI chat API on localhost; llmperf token_benchmark_ray.py',
                     gpu_note='AWS g5.12xlarge: 4x A10G 24 GB on PCIe (no NVLink)',
                     workload=dict(max_concurrency=c, num_prompts=d['results_num_completed_requests'], ignore_eos=False, max_tokens=150,
                                   dataset='llmperf synthetic prompts (sonnet lines), 550 / 150 tokens, stddev 0',
                                   lengths=f'550 / 150 llmperf tokens (Llama-2 tokenizer); measured means {d["results_number_input_tokens_mean"]} in, {d["results_number_output_tokens_mean"]:.1f} out (per request in the *_individual_responses.json beside the file)',
                                   notes=f'closed loop; errors {d["results_number_errors"]}'),
                     unknown=['prompt length in Yi tokens', 'max_num_seqs, max_num_batched_tokens (0.4.3 defaults)'])
        base = f'philschmid-4xa10g-yi-1.5-34b-c{c}'
        figs.append(dict(id=f'{base}-ttft-median', source='philschmid-llmperf-a10g', ref=f'{p}, field results_ttft_s_quantiles_p50 (s, x 1000)',
                         revision=C, url=url, metric='ttft_median', unit='ms', value=d['results_ttft_s_quantiles_p50'] * 1000, read='computed',
                         precision='float64 from the file, seconds x 1000', verified=True, use='holdout', use_note=un, setup=setup))
        figs.append(dict(id=f'{base}-output-throughput', source='philschmid-llmperf-a10g', ref=f'{p}, field results_mean_output_throughput_token_per_s',
                         revision=C, url=url, metric='output_throughput', unit=unit_thr, value=d['results_mean_output_throughput_token_per_s'],
                         read='printed', precision=thr_prec, verified=True, use='holdout', use_note=un, setup=setup))
    return figs


def all_figures():
    out = []
    for fn in (crusoe, surajssd, sglang_bench, lambda_fp8, mlperf, rocm, vllm_blog, nim, redhat, philschmid):
        out += fn()
    return out
