"""Append the issue 24 item 3 sources and figures to calib/published.yaml (run once on the
checkout before them; it refuses to run twice)."""
import collections, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common
from common import emit_figure, emit_source
import accelmark, others

Y = os.path.join(common.REPO_ROOT, 'calib', 'published.yaml')

NEW_SOURCES = [
    dict(id='crusoe-l40s', title='Crusoe cookbook, "vLLM FP8 on L40S": vLLM 0.5.5 benchmark_serving results (sonnet 550/150, Poisson 1-9 QPS), Llama-3.1-8B/70B BF16 and FP8-dynamic',
         url='https://github.com/crusoecloud/crusoe-cookbook/tree/8e3fc6e7741d0b6334c1b79b322509a79b3b0da6/content/vllm-l40s-fp8',
         revision='8e3fc6e7741d0b6334c1b79b322509a79b3b0da6', licence='Apache-2.0 (trimmed copies in calib/testdata/bench)'),
    dict(id='philschmid-llmperf-a10g', title='philschmid/llmperf benchmark results on AWS A10G (vLLM 0.4.3): Llama-3-8B-Instruct on 1x A10G, Yi-1.5-34B-Chat TP4 on 4x A10G',
         url='https://github.com/philschmid/llmperf', revision='5c1c321e95061fc20304eb882cb9653a88bc7b9c', licence='Apache-2.0 (cited, not copied: no figure of it is replayed)'),
    dict(id='sglang-bench-vllm060', title='sgl-project/sglang benchmark/benchmark_vllm_060/README.md: SGLang v0.3.0 vs vLLM v0.6.0 (multi-step 10), Llama-3.1-8B on 1x A100 80G and 70B on 4x H100 80G',
         url='https://github.com/sgl-project/sglang/blob/120affb9613cc3f5bcd055ec09c7621d3ced0ebc/benchmark/benchmark_vllm_060/README.md',
         revision='120affb9613cc3f5bcd055ec09c7621d3ced0ebc', licence='Apache-2.0 (printed tables: cited)'),
    dict(id='mlperf-inf-v4.1-amd', title='MLCommons MLPerf Inference v4.1 results, AMD closed division: Llama-2-70B FP8 on MI300X (vLLM-based harness), mlperf_log_summary.txt',
         url='https://github.com/mlcommons/inference_results_v4.1/tree/a2f5d66d17e8f75c02fd74dfe810ecca6a046696/closed/AMD',
         revision='a2f5d66d17e8f75c02fd74dfe810ecca6a046696', licence='no LICENSE seen in this index: cite only'),
    dict(id='rocm-vllm-devdocker', title='ROCm/vllm docs/dev-docker/README.md: MI300X latency tables of the rocm/vllm-dev image, vLLM 0.6.6 to 0.10.0, Llama-3.1-70B FP8-KV TP8',
         url='https://github.com/ROCm/vllm/blob/7802e2b72930/docs/dev-docker/README.md', revision='per figure (one README commit per release)',
         licence='Apache-2.0 (a README table: cited)'),
    dict(id='vllm-blog-fp8kv', title='vLLM blog, "The State of FP8 KV-Cache and Attention Quantization in vLLM" (2026-04-22), Table 4',
         url='https://github.com/vllm-project/vllm-project.github.io/blob/c3a01c4a5807c8d900ae468897e45263373e534e/_posts/2026-04-22-fp8-kvcache.md',
         revision='c3a01c4a5807c8d900ae468897e45263373e534e', licence='no licence file in the blog repository: cite only'),
    dict(id='nim-benchmarking-docs', title='NVIDIA NIM for LLMs benchmarking guide, "Performance" (docs version 1.0.0): Llama-3.3-70B-Instruct NIM 1.8.0 on 2x H100',
         url='https://docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance', revision='documentation version 1.0.0 (page as stored)',
         licence='NVIDIA documentation: cite only'),
    dict(id='redhat-mlperf-v5.1-blog', title='Red Hat blog, "Efficient and reproducible LLM inference: Red Hat MLPerf Inference v5.1 results" (vLLM 0.10.0, Llama-3.1-8B FP8)',
         url='https://www.redhat.com/en/blog/efficient-and-reproducible-llm-inference-red-hat-mlperf-inference-v51-results',
         revision='page as stored (seen through a mirror)', licence='blog post: cite only'),
]

OLD_ACCELMARK_NOTE = '"loose: achieved_qps is the target by construction and some figures do not rank across GPUs (H200 slower than H100 at QPS 25)"'
NEW_ACCELMARK_NOTE = ('"vLLM 0.7.3 run in-process (AsyncLLMEngine, V0): the client\'s coroutines and the engine\'s step loop share one Python '
                      'event loop, so its latencies grow with load beyond any GPU effect and do not rank by GPU (H200 slower than H100 at QPS 25); '
                      'the same rule for every AccelMark figure (calib/README.md). achieved_qps being the target does not matter here: arrivals '
                      'follow the seeded Poisson schedule and each latency is timed per request"')


def main():
    text = open(Y).read()
    if 'id: "crusoe-l40s"' in text:
        raise SystemExit('already generated')
    assert text.count(OLD_ACCELMARK_NOTE) == 24, text.count(OLD_ACCELMARK_NOTE)
    text = text.replace(OLD_ACCELMARK_NOTE, NEW_ACCELMARK_NOTE)
    old_src = ('  - id: "accelmark"\n    title: "FreedomIntelligence/AccelMark verified online results (vLLM 0.7.3)"\n'
               '    url: "https://github.com/FreedomIntelligence/AccelMark"\n    revision: "5797fc42745be2494e6213938d9e5afa0c6c5bef"\n')
    assert old_src in text
    text = text.replace(old_src, '  - id: "accelmark"\n    title: "FreedomIntelligence/AccelMark results (verified and community): vLLM 0.7.3, vLLM 0.20.1, SGLang 0.5.6 on NVIDIA GPUs, suites A-E"\n'
                        '    url: "https://github.com/FreedomIntelligence/AccelMark"\n    revision: "5797fc42745be2494e6213938d9e5afa0c6c5bef (main); a2ec8f6fe9fbd52a8d4ae24e51936a09001faf4a (branch B200) for files main lacks"\n')
    hdr = '# they are as printed (or as stored in the cited file); fix the source reference instead.\n'
    assert hdr in text
    text = text.replace(hdr, hdr + '# Long texts that repeat are written once with a YAML anchor (&tN, &lN) and referred to after (*tN).\n', 1)
    head, figs_part = text.split('\nfigures:\n', 1)
    head += '\n' + ''.join(emit_source(s) for s in NEW_SOURCES)
    figs = accelmark.figures() + others.all_figures()
    ids = collections.Counter(f['id'] for f in figs)
    dup = [i for i, c in ids.items() if c > 1]
    assert not dup, dup[:5]
    for i in ids:
        assert f'id: "{i}"' not in figs_part, i
    common.count(figs)
    body = ''.join(emit_figure(f) for f in figs)
    assert figs_part.endswith('\n')
    open(Y, 'w').write(head + 'figures:\n' + figs_part + body)
    c = collections.Counter((f['source'], f['use']) for f in figs)
    for k, v in sorted(c.items()):
        print(v, k)
    print(len(figs), 'figures')


if __name__ == '__main__':
    main()
