"""Shared helpers of the published.yaml generator (issue 24 item 3): git reads of the mirror
snapshots, YAML emission in calib/published.yaml's style."""
import json, os, statistics as st, subprocess

MIRROR = os.environ.get('GPUFRAG_MIRROR', '/work/.mirror')  # git snapshots: MIRROR/<owner>+<repo>/repo
REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..'))


def pct(xs, q):
    """numpy's linear percentile (q in [0, 1])."""
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    f = int(k)
    c = min(f + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)


def summarise(d):
    """Recomputed medians and length statistics of a vLLM --save-result run with per-request arrays."""
    il, ol, tt, itls = d['input_lens'], d['output_lens'], d['ttfts'], d.get('itls')
    ok = [i for i in range(len(ol)) if ol[i] > 0 and (not d.get('errors') or not d['errors'][i])]
    out = dict(n_req=len(ol), n_ok=len(ok), in_mean=st.mean(il[i] for i in ok), in_min=min(il[i] for i in ok),
               in_max=max(il[i] for i in ok), out_mean=st.mean(ol[i] for i in ok), out_max=max(ol[i] for i in ok),
               re_median_ttft_ms=pct([tt[i] for i in ok], 0.5) * 1000)
    if itls:
        out['re_median_tpot_ms'] = pct([sum(itls[i]) / (ol[i] - 1) for i in ok if ol[i] > 1], 0.5) * 1000
    return out


def git(mirror, *a):
    return subprocess.run(['git', '-C', f'{MIRROR}/{mirror}/repo', *a], capture_output=True, text=True, check=True).stdout


def gitb(mirror, *a):
    return subprocess.run(['git', '-C', f'{MIRROR}/{mirror}/repo', *a], capture_output=True, check=True).stdout


def blob(mirror, commit, path):
    return git(mirror, 'rev-parse', f'{commit}:{path}').strip()


def q(s):
    """A YAML double-quoted scalar (JSON's escaping is valid YAML)."""
    return json.dumps(str(s), ensure_ascii=False)


def num(v):
    if isinstance(v, bool):
        return 'true' if v else 'false'
    if isinstance(v, int):
        return str(v)
    if v == float('inf'):
        return '.inf'
    r = repr(float(v))
    return r


ANCHORS = {}
REPEATED = set()  # long strings and lists that occur more than once (set by count())


def count(figs):
    seen = set()
    def see(k):
        if k in seen:
            REPEATED.add(k)
        seen.add(k)
    for f in figs:
        for k, v in f.items():
            if isinstance(v, str) and len(v) >= 60 and k != 'id':
                see(v)
        s = f['setup']
        for k, v in s.items():
            if isinstance(v, str) and len(v) >= 60:
                see(v)
        for v in (s.get('workload') or {}).values():
            if isinstance(v, str) and len(v) >= 60:
                see(v)
        if s.get('unknown'):
            see(json.dumps(s['unknown']))


def scalar(v):
    """A scalar; a long string that repeats is written once (&tN) and aliased after (*tN)."""
    if isinstance(v, (bool, int, float)):
        return num(v)
    if len(v) >= 60 and v in REPEATED:
        if v in ANCHORS:
            return '*' + ANCHORS[v]
        ANCHORS[v] = f't{len(ANCHORS) + 1}'
        return f'&{ANCHORS[v]} {q(v)}'
    return q(v)


def seq(key, items, indent):
    """A list of strings; a list met before is an alias of its first occurrence."""
    k = json.dumps(items)
    pad = ' ' * indent
    if k not in REPEATED:
        return [f'{pad}{key}:'] + [f'{pad}  - {q(u)}' for u in items]
    if k in ANCHORS:
        return [f'{pad}{key}: *{ANCHORS[k]}']
    ANCHORS[k] = f'l{len(ANCHORS) + 1}'
    return [f'{pad}{key}: &{ANCHORS[k]}'] + [f'{pad}  - {q(u)}' for u in items]


SETUP_ORDER = ['model', 'gpu', 'gpus', 'tp', 'engine', 'engine_version', 'dtype', 'weight_dtype', 'kv_dtype', 'system',
               'options', 'gpu_note']
FIG_ORDER = ['id', 'source', 'ref', 'revision', 'url', 'metric', 'unit', 'value', 'read', 'precision', 'verified',
             'verify_note', 'use', 'use_note']


def emit_figure(f):
    out = []
    first = True
    for k in FIG_ORDER:
        if k not in f or f[k] is None:
            continue
        v = f[k]
        out.append(('  - ' if first else '    ') + f'{k}: {scalar(v)}')
        first = False
    s = f['setup']
    out.append('    setup:')
    for k in SETUP_ORDER:
        if k in s and s[k] is not None:
            out.append(f'      {k}: {scalar(s[k])}')
    w = s.get('workload') or {}
    if w:
        out.append('      workload:')
        for k in sorted(w):
            if w[k] is None:
                continue
            out.append(f'        {k}: {scalar(w[k])}')
    if s.get('unknown'):
        out += seq('unknown', s['unknown'], 6)
    return '\n'.join(out) + '\n'


def emit_source(s):
    out = [f'  - id: {q(s["id"])}']
    for k in ('title', 'url', 'revision', 'licence'):
        out.append(f'    {k}: {q(s[k])}')
    return '\n'.join(out) + '\n'
