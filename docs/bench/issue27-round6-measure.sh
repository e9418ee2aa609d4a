#!/usr/bin/env bash
# measure.sh NEWDIR OUTDIR: alternated base (/tmp/base7) and new test binaries; fresh OUTDIR.
set -eu
NEW=$1; OUT=$2; mkdir -p "$OUT"; B=/tmp/base7
(cd "$NEW" && go test -c -o "$OUT/new-caching.test" ./alloc/caching && go test -c -o "$OUT/new-exporter.test" ./exporter && go build -o "$OUT/gpufrag" ./cmd/gpufrag)
uptime > "$OUT/load.txt"
for i in 1 2 3 4 5 6 7 8 9 10; do
  for v in old new; do
    if [ $v = old ]; then ct=$B/caching.test; et=$B/exporter.test; else ct=$OUT/new-caching.test; et=$OUT/new-exporter.test; fi
    (cd "$NEW/alloc/caching" && nice -n -10 $ct -test.run '^$' -test.bench 'AllocFree/allocator=caching$/live=10000' -test.benchmem -test.count 1 >> "$OUT/caching-$v.txt")
    (cd "$NEW/exporter" && nice -n -10 $et -test.run '^$' -test.bench 'ScrapeInterval/replicas=1$|HTTPScrape$/gzip=false|HTTPScrapeDaemon' -test.benchtime 400x -test.benchmem -test.count 1 >> "$OUT/exporter-$v.txt")
  done
  uptime >> "$OUT/load.txt"
done
cd "$OUT" && for k in caching exporter; do go run golang.org/x/perf/cmd/benchstat@latest $k-old.txt $k-new.txt > $k-benchstat.txt 2>&1 || true; done
echo done
