#!/bin/sh
# gen-hostile.sh DIR: writes the crafted scenarios of issue 28, item 2, to
# DIR, for timing gpufrag simulate on them by hand:
#   aliases.yaml  one run anchored and 150,000 aliases of it (600 KB)
#   runs.yaml     20,000 literal runs (740 KB)
#   laughs.yaml   aliases of aliases, 8^5 nodes from 150 bytes
# e.g. sh gen-hostile.sh /tmp/h && /usr/bin/time -v gpufrag simulate --scenario /tmp/h/aliases.yaml
set -e
dir=${1:?usage: gen-hostile.sh DIR}
mkdir -p "$dir"
head='model: llama-3.1-8b
gpu: h100-80g
workload:
  requests: {rate: 1, count: 1, prompt: {dist: fixed, min: 10}, output: {dist: fixed, min: 5}}
runs:'
{ echo "$head"; printf "  [&r {kv: 'paged:16', alloc: caching}"; yes ', *r' | head -n 150000 | tr -d '\n'; echo ']'; } > "$dir/aliases.yaml"
{ echo "$head"; yes "  - {kv: 'paged:16', alloc: caching}" | head -n 20000; } > "$dir/runs.yaml"
cat > "$dir/laughs.yaml" <<'YAML'
a: &a [1, 1, 1, 1, 1, 1, 1, 1]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c]
e: [*d, *d, *d, *d, *d, *d, *d, *d]
YAML
