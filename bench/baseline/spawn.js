// Baseline for the exec workload (SPEC §10): Node's child_process.spawnSync.
//   node bench/baseline/spawn.js <n> [heap-MB]
// Prints "RESULT node-spawnsync[-heap] spawn <n> <seconds> 1".
const { spawnSync } = require('child_process');
const n = Number(process.argv[2] || 300);
const heap = Number(process.argv[3] || 0);
const keep = [];
for (let i = 0; i < heap; i++) keep.push(Buffer.alloc(1 << 20, i & 255)); // touched pages
spawnSync('/bin/true');
const t = process.hrtime.bigint();
for (let i = 0; i < n; i++) spawnSync('/bin/true');
const dt = Number(process.hrtime.bigint() - t) / 1e9;
console.log(`RESULT node-spawnsync${heap ? '-heap' : ''} spawn ${n} ${dt.toFixed(6)} 1`);
if (keep.length !== heap) process.exit(1);
