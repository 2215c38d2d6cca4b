// Baseline for the VirtualSandbox workload (SPEC §10): memfs (Node), the same
// 10 000 files of 100 bytes in 100 directories, with the *Sync API; stat and
// readdir build the same 4-field records as the sandbox.
//   node bench/baseline/memfs.js work [iterations]
//   node --expose-gc bench/baseline/memfs.js memory [files]
// Prints "RESULT node-memfs <phase> <ops> <seconds> <iteration>" or
// "MEMORY node-memfs <files> <heap bytes/file> <rss bytes/file>".
const path = require('path');
const modules = process.env.BENCH_NODE_MODULES || path.join(__dirname, '..', '..', 'build', 'bench', 'node_modules');
const { Volume } = require(path.join(modules, 'memfs'));

const now = () => Number(process.hrtime.bigint()) / 1e9;
const payload = 'x'.repeat(100);

function workload(na, nb, nf) {
  const dirs = [], files = [];
  for (let a = 0; a < na; a++)
    for (let b = 0; b < nb; b++) {
      const d = `/a${a}/b${b}`;
      dirs.push(d);
      for (let f = 0; f < nf; f++) files.push(`${d}/f${String(f).padStart(2, '0')}.txt`);
    }
  return { dirs, files };
}

const mode = process.argv[2] || 'work';
if (mode === 'memory') {
  const n = Number(process.argv[3] || 100000);
  const { dirs, files } = workload(10, Math.floor(n / 1000), 100);
  global.gc(); global.gc();
  const m0 = process.memoryUsage();
  const vol = new Volume();
  for (const d of dirs) vol.mkdirSync(d, { recursive: true });
  for (const f of files) vol.writeFileSync(f, payload);
  global.gc(); global.gc();
  const m1 = process.memoryUsage();
  const heap = (m1.heapUsed + m1.external) - (m0.heapUsed + m0.external);
  console.log(`MEMORY node-memfs ${files.length} ${(heap / files.length).toFixed(1)} ${((m1.rss - m0.rss) / files.length).toFixed(1)}`);
  if (vol.existsSync('/nope')) console.log('unreachable');
} else {
  const iterations = Number(process.argv[3] || 3);
  const { dirs, files } = workload(10, 10, 100);
  const listdirs = ['/'];
  for (let a = 0; a < 10; a++) listdirs.push(`/a${a}`);
  listdirs.push(...dirs);
  const phase = (it, name, n, fn) => {
    const t = now();
    fn();
    console.log(`RESULT node-memfs ${name} ${n} ${(now() - t).toFixed(6)} ${it}`);
  };
  for (let it = 1; it <= iterations; it++) {
    const vol = new Volume();
    phase(it, 'create', files.length, () => {
      for (const d of dirs) vol.mkdirSync(d, { recursive: true });
      for (const f of files) vol.writeFileSync(f, payload);
    });
    phase(it, 'read', files.length, () => { for (const f of files) vol.readFileSync(f, 'latin1'); });
    phase(it, 'stat', files.length, () => {
      for (const f of files) {
        const s = vol.statSync(f);
        ({ type: s.isDirectory() ? 'directory' : 'file', size: s.size, mtime: s.mtimeMs / 1000, mode: s.mode & 0o7777 });
      }
    });
    phase(it, 'list', listdirs.length, () => {
      for (const d of listdirs)
        vol.readdirSync(d, { withFileTypes: true }).map((e) => {
          const dir = e.isDirectory();
          return { name: e.name, type: dir ? 'directory' : 'file', is_directory: dir,
                   size: dir ? 0 : vol.statSync(`${d}/${e.name}`).size };
        });
    });
    phase(it, 'delete', files.length, () => {
      for (const f of files) vol.unlinkSync(f);
      for (let i = dirs.length - 1; i >= 0; i--) vol.rmdirSync(dirs[i]);
      for (let a = 0; a < 10; a++) vol.rmdirSync(`/a${a}`);
    });
  }
}
