"""AccelMark figures: every NVIDIA result.json of suites A-E run by a released engine (vLLM 0.7.3,
vLLM 0.20.1, SGLang 0.5.6), read from the mirror (main @ 5797fc4, then branch B200 @ a2ec8f6 for
files main lacks). Returns figure dicts in published.yaml's schema."""
import json, re
from common import git, blob

M = 'FreedomIntelligence+AccelMark'
REPO = 'FreedomIntelligence/AccelMark'
MAIN = '5797fc42745be2494e6213938d9e5afa0c6c5bef'
B200 = 'a2ec8f6fe9fbd52a8d4ae24e51936a09001faf4a'

# chip slug in the run name -> (gpufrag GPU name, description, preset?)
GPUS = [
    ('a100_sxm4_40gb', 'a100-40g'), ('a100_sxm4_80gb', 'a100-80g'), ('a800_sxm4_80gb', 'a800-80g'),
    ('h100_80gb_hbm3', 'h100-80g'), ('h200x', 'h200-141g'), ('h20_3e', 'h20-3e-141g'), ('b200x', 'b200-192g'),
    ('l4x', 'l4-24g'), ('rtx_6000_ada', 'rtx-6000-ada-48g'), ('rtx_a6000', 'rtx-a6000-48g'),
    ('geforce_rtx_4090_d', 'rtx4090d-24g'), ('geforce_rtx_4090x', 'rtx4090-24g'), ('geforce_rtx_3090', 'rtx3090-24g'),
    ('v100s_pcie_32gb', 'v100s-32g'),
]
ENGINES = {'0.7.3': 'vllm-v0', '0.20.1': 'vllm-v1', '0.5.6': 'sglang'}
# Existing figures (published.yaml, source accelmark): run -> online qps levels recorded there.
PUBLISHED = {
    'nvidia_a100_sxm4_40gbx1_suite_A_nvidia_vllm_47f5d58e_b4a92b30': {5, 25},
    'nvidia_a100_sxm4_80gbx1_suite_A_nvidia_vllm_47f5d58e_ed4b0557': {5, 25},
    'nvidia_h100_80gb_hbm3x1_suite_A_nvidia_vllm_47f5d58e_831c95a7': {5, 25},
    'nvidia_h200x1_suite_A_nvidia_vllm_47f5d58e_29b2ec38': {5, 25},
    'nvidia_a100_sxm4_40gbx8_suite_B_nvidia_vllm_47f5d58e_14410aea': {2, 10},
}
SUITE = {  # suites/suite_*/suite.json at main
    'A': dict(model='meta-llama/Meta-Llama-3-8B-Instruct', data='sharegpt_standard_v1', mml=4096, out=512, runs=3,
              offline=100, online=300, inter=150),
    'B': dict(model='meta-llama/Meta-Llama-3-70B-Instruct', data='sharegpt_standard_v1', mml=4096, out=512, runs=3,
              offline=100, online=200, inter=50),
    'C': dict(model='meta-llama/Llama-3.1-8B-Instruct', data='sharegpt_standard_v1', mml=4096, out=512, runs=3,
              offline=100, online=300, inter=None),
    'D': dict(model='meta-llama/Llama-3.1-8B-Instruct', data='sharegpt_longctx_v1', mml=30208, out=256, runs=2,
              offline=50, online=200, inter=100),
    'E': dict(model='meta-llama/Meta-Llama-3-8B-Instruct', data='sharegpt_standard_v1', mml=4096, out=512, runs=3,
              offline=150, online=None, inter=None),
}
WDT = {'BF16': None, 'FP16': None, 'FP8': 'fp8', 'W8A8': 'int8', 'W8A16': 'int8', 'W4A16': 'int4'}
AMPERE = ('a100', 'a800', 'a6000', '3090', 'v100')


def files():
    seen, out = set(), []
    for ref in (MAIN, B200):
        for ln in git(M, 'ls-tree', '-r', ref, 'results').splitlines():
            meta, f = ln.split('\t')
            if not f.endswith('/result.json'):
                continue
            b = meta.split()[2]
            if b in seen or f in {p for _, p, _ in out}:
                continue
            seen.add(b)
            out.append((ref, f, b))
    return out


def use_of(engine, scen, prec):
    """The per-setup rule (calib/README.md, 'Fit, hold out, cross-check')."""
    if engine == 'vllm-v0':
        return 'cross-check', ('vLLM 0.7.3 run in-process (AsyncLLMEngine, V0): the client\'s coroutines and the engine\'s step loop '
                               'share one Python event loop, so its latencies grow with load beyond any GPU effect (A800 suite A '
                               'QPS 25: TPOT 57.95 ms against SGLang\'s 30.61 on the same GPU) and do not rank by GPU (H200 slower '
                               'than H100 at QPS 25; A100-80GB suite D TPOT 30.57 ms against 16.06 on the A800, the same silicon)')
    if scen == 'offline':
        return 'cross-check', ('offline: the loadgen sends all requests at once at every client_concurrency label, so the levels '
                               'are repeats of one batch; output lengths (temperature 0, EOS or max_tokens) are not recorded')
    if prec in ('W8A8', 'W8A16', 'W4A16'):
        return 'cross-check', ('INT8/INT4 weights: the simulator models them as fewer weight bytes at BF16 math, but these runs are '
                               'slower than BF16 (vLLM 0.20.1 A100-80GB QPS 5 TPOT: BF16 13.32, W8A16 16.66, W4A16 18.15 ms; its '
                               'quantized runs also set enforce_eager), so the kernels\' cost, not their bytes, sets them; W8A8 '
                               'needs an INT8 peak no GPU preset has')
    return 'fit', ('online/interactive p50 TTFT and TPOT of an engine whose scheduler runs apart from the client\'s event loop '
                   '(vLLM 0.20.1 V1 engine core process; SGLang scheduler process), BF16 or FP8: the same rule for every AccelMark '
                   'figure (calib/README.md)')


def figures():
    figs = []
    for ref, path, b in files():
        run = path.split('/')[2]
        if not run.startswith(('nvidia_', 'tesla_')):
            continue
        m = re.search(r'suite_([A-G])', run)
        if not m or m.group(1) not in SUITE:
            continue
        suite = m.group(1)
        parts = path.split('/')
        sub = '/'.join(parts[3:-1])
        scen = parts[-2]
        if sub == '' or scen not in ('offline', 'online', 'interactive'):
            continue  # the merged result.json repeats the per-scenario files
        d = json.loads(git(M, 'cat-file', '-p', b))
        sw, mo, t, ch, meta = d['software'], d['model'], d['task'], d['chip'], d['meta']
        ver = sw['framework_version']
        base_ver = ver.split('+')[0]
        if base_ver not in ENGINES:
            continue  # 0.19.1rc1.dev (a development build), 1Cat-vLLM (a fork): no released version to name
        engine = ENGINES[base_ver]
        gpu = next((g for k, g in GPUS if k in run), None)
        if gpu is None:
            raise SystemExit(f'unknown chip in {run}')
        if sw['framework'] == 'SGLang' and engine != 'sglang' or sw['framework'] == 'vLLM' and engine == 'sglang':
            raise SystemExit(f'engine mismatch {path}')
        prec = mo['precision']
        par = t['parallelism']
        tp = par['tensor_parallel_size']
        ngpu = ch['count']
        if par.get('data_parallel_size', 1) not in (1, None):
            raise SystemExit(f'data parallel {path}')
        cfg = t.get('extra_config') or {}
        S = SUITE[suite]
        if mo['model_id'] != S['model'] and prec in ('BF16', 'FP16'):
            raise SystemExit(f'model {mo["model_id"]} in {path}')
        url = f'https://github.com/{REPO}/blob/{ref}/{path}'
        wd = WDT[prec]
        opts = []
        if mo.get('quantization_method'):
            opts.append(f'{prec} checkpoint {mo["model_id"]} ({mo["quantization_method"]})')
        if prec == 'FP8' and any(a in run for a in AMPERE):
            opts.append('no FP8 tensor cores on this GPU: vLLM runs the FP8 checkpoint weight-only (Marlin W8A16)')
        for k in ('enforce_eager', 'max_num_seqs', 'gpu_memory_utilization'):
            if k in cfg:
                opts.append(f'extra_config {k}={json.dumps(cfg[k])}')
        if engine != 'sglang':
            opts.append('runner ' + d['implementation_id'] + ': in-process AsyncLLMEngine (no HTTP), temperature 0')
        else:
            opts.append('runner ' + d['implementation_id'] + ': in-process sgl.Engine.async_generate (no HTTP), temperature 0')
        unknown = ['output lengths (temperature 0, stop at EOS or max_tokens; samples.jsonl not committed)',
                   'prompt lengths after the chat template (requests.jsonl input_tokens count the raw prompt)']
        if engine != 'sglang':
            unknown.append('max_num_seqs of the async engine (the runner passes max_num_seqs only to the offline LLM; '
                           'vLLM default 256 in 0.7.3, 1024 on big GPUs in 0.20.1)')
            unknown.append('max_num_batched_tokens and chunked prefill (engine defaults of the version)')
        else:
            unknown.append('SGLang server arguments beyond the runner\'s (defaults of 0.5.6: chunked prefill, radix cache on)')
        common_setup = dict(model=mo['model_id'], gpu=gpu, gpus=ngpu, tp=tp, engine=engine,
                            engine_version=ver + (' (V0)' if engine == 'vllm-v0' else ' (V1)' if engine == 'vllm-v1' else ''),
                            dtype='fp16' if prec == 'FP16' else 'bf16', weight_dtype=wd, kv_dtype='fp16' if prec == 'FP16' else 'bf16',
                            options='; '.join(opts),
                            gpu_note=f'{ch["name"]} x{ngpu}; host CPU {d["environment"]["cpu"]["model"]}; driver {d["environment"]["accelerators"][0].get("driver_version")}')
        idbase = f'accelmark-{gpu}-{engine}-{base_ver}-suite-{suite.lower()}' + (f'-{sub.split("/")[0].lower()}' if '/' in sub else '')
        if suite == 'E' and sub != 'offline':
            pass
        src_note = f'{"community" if "/community/" in path else "verified"} run {meta["run_name"]} submitted by {meta.get("submitted_by")} on {meta.get("date")}'
        precision_note = 'printed in result.json, rounded to 0.01 in the file'
        met = d['metrics']
        wl_common = dict(dataset=f'AccelMark {S["data"]} (datasets/{S["data"]}/requests.jsonl, first N requests; input_tokens there)',
                         max_tokens=S['out'], temperature=0.0, max_model_len=S['mml'], ignore_eos=False,
                         notes=src_note)
        if 'gpu_memory_utilization' in cfg:
            wl_common['gpu_memory_utilization'] = cfg['gpu_memory_utilization']
        use_, unote = use_of(engine, scen, prec)
        if scen == 'offline':
            for r in met['offline']['results_by_concurrency']:
                if r.get('oom') or r.get('throughput_tokens_per_sec') in (None, 0):
                    continue
                c = r['client_concurrency']
                w = dict(wl_common, arrival='all at once (offline LLM.generate)', request_rate=float('inf'), num_prompts=S['offline'],
                         runs_pooled=S['runs'], batch=S['offline'])
                w['notes'] += f'; offline level client_concurrency={c}: all {S["offline"]} requests at once (a repeat of the other levels); elapsed median {r.get("elapsed_seconds_median")} s'
                figs.append(dict(id=f'{idbase}-offline-c{c}-output-throughput'.replace('_', '-'), source='accelmark',
                                 ref=f'{path}, metrics.offline.results_by_concurrency[client_concurrency={c}].throughput_tokens_per_sec',
                                 revision=ref, url=url, metric='output_throughput', unit='tok/s', value=r['throughput_tokens_per_sec'],
                                 read='printed', precision=precision_note, verified=True, use=use_, use_note=unote,
                                 setup=dict(common_setup, workload=w, unknown=unknown)))
        elif scen == 'online':
            for r in met['online']['results_by_qps']:
                qps = r['target_qps']
                if run in PUBLISHED and qps in PUBLISHED[run]:
                    continue  # already in published.yaml
                for k, mk in (('ttft_ms_p50', 'ttft_median'), ('tpot_ms_p50', 'tpot_median')):
                    if r.get(k) in (None, 0):
                        continue
                    w = dict(wl_common, arrival='poisson (random.expovariate, seeded; all requests dispatched with asyncio.gather)',
                             request_rate=float(qps), num_prompts=S['online'], runs_pooled=S['runs'])
                    qs = (f'{qps:g}').replace('.', 'p')
                    figs.append(dict(id=f'{idbase}-online-qps{qs}-{mk.replace("_", "-")}'.replace('_', '-'), source='accelmark',
                                     ref=f'{path}, metrics.online.results_by_qps[target_qps={qps:g}].{k}',
                                     revision=ref, url=url, metric=mk, unit='ms', value=r[k], read='printed',
                                     precision=precision_note, verified=True, use=use_, use_note=unote,
                                     setup=dict(common_setup, workload=w, unknown=unknown)))
        else:
            it = met['interactive']
            for k, mk in (('ttft_ms_p50', 'ttft_median'), ('tpot_ms_p50', 'tpot_median')):
                if it.get(k) in (None, 0):
                    continue
                w = dict(wl_common, arrival='one request at a time (the next is sent when the last completes)',
                         max_concurrency=1, num_prompts=S['inter'], runs_pooled=S['runs'])
                figs.append(dict(id=f'{idbase}-interactive-{mk.replace("_", "-")}'.replace('_', '-'), source='accelmark',
                                 ref=f'{path}, metrics.interactive.{k}', revision=ref, url=url, metric=mk, unit='ms', value=it[k],
                                 read='printed', precision=precision_note, verified=True, use=use_, use_note=unote,
                                 setup=dict(common_setup, workload=w, unknown=unknown)))
    return figs


if __name__ == '__main__':
    import collections
    fs = figures()
    print(len(fs))
    print(collections.Counter((f['setup']['gpu'], f['setup']['engine'], f['use']) for f in fs))
    ids = collections.Counter(f['id'] for f in fs)
    print([i for i, c in ids.items() if c > 1][:10])
