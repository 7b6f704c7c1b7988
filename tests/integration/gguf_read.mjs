// Reads a GGUF file with an independent parser, the npm package @huggingface/gguf (pinned and
// fetched by scripts/report-assets.sh), and prints what it found as one JSON object: the
// metadata (long arrays as their length and first values), the tensors (name, shape, ggml type
// name) and, for the ids given with --tokens, those tokens and their types.
//
//   node gguf_read.mjs ASSETS_DIR FILE.gguf [--tokens 151645,151667]
//
// Exits 1 with a message on stderr when the package cannot read the file.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [assets, file, ...rest] = process.argv.slice(2);
if (!assets || !file) {
  console.error('usage: node gguf_read.mjs ASSETS_DIR FILE.gguf [--tokens ID,ID...]');
  process.exit(2);
}
let tokenIds = [];
for (let i = 0; i < rest.length; i += 2)
  if (rest[i] === '--tokens') tokenIds = rest[i + 1].split(',').map(Number);

const entry = path.join(assets, 'node_modules', '@huggingface', 'gguf', 'dist', 'index.mjs');
const { gguf, GGMLQuantizationType } = await import(pathToFileURL(entry).href);

const plain = (v) => (typeof v === 'bigint' ? Number(v) : v);
let parsed;
try {
  parsed = await gguf(path.resolve(file), { allowLocalFile: true });
} catch (e) {
  console.error(`@huggingface/gguf cannot read ${file}: ${e.message}`);
  process.exit(1);
}
const metadata = {};
for (const [k, v] of Object.entries(parsed.metadata)) {
  if (Array.isArray(v) && v.length > 64)
    metadata[k] = { length: v.length, head: v.slice(0, 8).map(plain) };
  else metadata[k] = Array.isArray(v) ? v.map(plain) : plain(v);
}
const tensors = parsed.tensorInfos.map((t) => ({
  name: t.name,
  shape: t.shape.map(plain),
  type: String(GGMLQuantizationType[t.dtype] ?? t.dtype).toLowerCase(),
}));
const tokens = {};
const list = parsed.metadata['tokenizer.ggml.tokens'];
const types = parsed.metadata['tokenizer.ggml.token_type'];
for (const id of tokenIds)
  tokens[id] = { text: list?.[id] ?? null, type: types ? plain(types[id]) : null };
process.stdout.write(JSON.stringify({ metadata, tensors, tokens }) + '\n');
