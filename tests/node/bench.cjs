// Three tinybench benchmarks of known allocation under CodSpeed's tinybench plugin, for
// tests/it_bench.c and docs/BENCH.md (truth: fixtures/README.md, "Node.js benchmarks").
// Each benchmark allocates COUNT typed arrays of SIZE bytes, whose backing stores Node.js
// allocates with calloc (zero-filled), and keeps them until it returns.
// MT_BENCH_DOUBLE=NAME doubles that benchmark's count (the comparison gate's test).
const { Bench } = require("tinybench");
const { withCodSpeed } = require("@codspeed/tinybench-plugin");

const benches = [
	["alloc_64k_x10", 64 * 1024, 10],
	["alloc_128k_x20", 128 * 1024, 20],
	["alloc_1m_x5", 1024 * 1024, 5],
];

const bench = withCodSpeed(new Bench({ iterations: 1, warmupIterations: 0 }));
for (const [name, size, count] of benches) {
	const n = process.env.MT_BENCH_DOUBLE === name ? 2 * count : count;
	bench.add(name, () => {
		const kept = [];
		for (let i = 0; i < n; i++)
			kept.push(new Uint8Array(size));
		return kept.length;
	});
}

bench.run().then(() => {}, (e) => {
	console.error(e);
	process.exit(1);
});
