#!/bin/sh
# Every figure of the README's "Performance" table, from one build, in one sitting:
# the commands its last column lists, in the order the README's table was last measured.
# Output (each run's log, each load-generator run's JSON summary) goes to
# target/sitting/<UTC start>/; the machine's idle share is logged before each run, since
# the host is shared and a busy neighbour moves every figure.
#
#   sh scripts/sitting.sh          # the whole set, ≈ 20 minutes after the build on the 2-core machine
#   SITTING_ONLY="store reload" sh scripts/sitting.sh   # some of: engine auth store reload loadgen
set -eu
cd "$(dirname "$0")/.."
out="target/sitting/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
only="${SITTING_ONLY:-engine auth store reload loadgen}"
wants() { case " $only " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# Build everything first, so no run pays for (or competes with) compiling.
cargo build --release --bins
cargo bench --no-run

# run NAME COMMAND...: log the machine's idle share, then the command's output, to NAME.log.
run() {
    name=$1
    shift
    {
        echo "# $(date -u +%H:%M:%S) $*"
        echo "# cpu idle % over 2 s: $(vmstat 2 2 | tail -1 | awk '{print $15}')"
    } > "$out/$name.log"
    echo "== $name: $*"
    "$@" >> "$out/$name.log" 2>&1
    echo "   done $(date -u +%H:%M:%S)"
}

# loadgen NAME ARGS...: one load-generator run, its JSON summary kept beside its log.
loadgen() {
    name=$1
    shift
    run "$name" target/release/predex-loadgen --out "$out/$name.json" "$@"
}

if wants engine; then run engine cargo bench --bench engine; fi
if wants auth; then run auth cargo bench --bench auth; fi
if wants store; then
    fills="PREDEX_BENCH_FILLS=1500000 PREDEX_BENCH_IN_FLIGHT=64"
    run store-hot-1 env $fills cargo bench --bench store
    run store-spread-1 env $fills PREDEX_BENCH_WALLETS=1000 cargo bench --bench store
    run store-hot-2 env $fills cargo bench --bench store
    run store-spread-2 env $fills PREDEX_BENCH_WALLETS=1000 cargo bench --bench store
fi
if wants reload; then
    run reload-clean-1 cargo bench --bench reload
    run reload-crash-1 env PREDEX_BENCH_CRASH=1 cargo bench --bench reload
    run reload-clean-2 cargo bench --bench reload
    run reload-crash-2 env PREDEX_BENCH_CRASH=1 cargo bench --bench reload
fi
if wants loadgen; then
    loadgen default
    loadgen closed64 --max-rate 30000 --rate 0
    loadgen closed128-1 --concurrency 128 --max-rate 30000 --rate 0
    loadgen closed128-2 --concurrency 128 --max-rate 30000 --rate 0
    loadgen closed256-1 --concurrency 256 --max-rate 30000 --rate 0
    loadgen closed256-2 --concurrency 256 --max-rate 30000 --rate 0
    loadgen open-1 --no-ceilings --no-closed
    loadgen open-2 --no-ceilings --no-closed
    loadgen feed --no-ceilings --no-closed --markets 256 --subscribers 1000
fi
echo "all output in $out"
