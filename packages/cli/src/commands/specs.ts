/**
 * The syntax and one-line description of every `tfs` command: all that `tfs --help` lists and the
 * parser routes by. Each command's module (and the packages it needs: the store, tensors, lanes,
 * remote) loads only when that command runs, so `tfs inspect` never loads the store.
 */
export const SPECS = {
  init: {
    command: 'init',
    describe:
      'Create the store (or adopt the one there); --shared makes it one that the users of a group can all read and write at once',
  },
  inspect: {
    command: 'inspect <file>',
    describe:
      'Validate a .safetensors, .gguf or .cozytensors file (or a sharded *.safetensors.index.json with its shards) and print its header; a name that is not a path is a checkpoint ref',
  },
  plan: {
    command: 'plan <file>',
    describe: 'Cut a file into records by its own bytes and hash them (no store needed)',
  },
  import: {
    command: 'import <path>',
    describe:
      'Import a file, a folder, a Hugging Face repository (hf://owner/repo[@revision]), an https:// URL to a file or a Civitai model version (civitai://<id>) as a snapshot, or a portable folder as its checkpoint, and name it with a ref; a Hugging Face cache folder (hub/, models--owner--name or snapshots/<commit>) as its repositories, one tree per commit, branches from refs/',
  },
  convert: {
    command: 'convert <src>',
    describe:
      'Convert a Diffusers, PEFT adapter or Transformers folder, a .safetensors/.gguf file (local, hf://, https:// or civitai://) or an imported snapshot ref into a cozytensors checkpoint (--to ORIGIN --repo R[@BRANCH]: publish it to a repository branch while converting)',
  },
  ls: {
    command: 'ls [ref]',
    describe: 'List refs, or the files of one snapshot',
  },
  ref: {
    command: 'ref <action> <name> [target]',
    describe: 'Read (get), point (set <name> <target>) or delete (rm) a ref; --expected makes it a compare-and-swap',
  },
  export: {
    command: 'export <ref> <dir>',
    describe:
      'Rebuild a snapshot as ordinary files under a folder, byte-exact; a checkpoint as its original files (--safetensors), its header file (--cozytensors) or a portable origin folder: header, chunks/ and refs/ (--portable); a repository revision as a Hugging Face cache root (--hf-cache)',
  },
  verify: {
    command: 'verify',
    describe: 'Check that everything refs and roots reach is present and intact (exit 4 if not)',
  },
  gc: {
    command: 'gc [origin]',
    describe:
      'Remove objects no ref, root or live lease reaches; with an origin (folder, S3, hub with an admin token), its unreachable objects older than --grace',
  },
  rm: {
    command: 'rm <ref>',
    describe:
      'Delete a ref, a branch (owner/name@branch) or a repository (--all, tags with --tags) and, at once, the objects only it reached; print the bytes freed',
  },
  du: {
    command: 'du',
    describe:
      'Show logical and stored bytes, the dedup ratio, and per ref and per repository logical, stored, exclusive and shared bytes',
  },
  cache: {
    command: 'cache <action>',
    describe:
      'The cache: ls (cached refs and objects, their bytes and last use) | prune [--max-size S] [--older-than D] (evict least recently used first)',
  },
  pin: {
    command: 'pin <ref>',
    describe: 'Make a cached ref saved: kept until removed, never evicted',
  },
  unpin: {
    command: 'unpin <ref>',
    describe: 'Make a ref cached: evictable under the budget (TENSORFS_CACHE_MAX), least recently used first',
  },
  tensors: {
    command: 'tensors <ref>',
    describe: 'List the tensors of a snapshot or checkpoint (name, dtype, shape, bytes, objects), reading headers only',
  },
  cat: {
    command: 'cat <ref> <tensor>',
    describe: "Write a tensor's raw bytes (or, with --decode, its values) to stdout, or atomically to a file with -o",
  },
  compose: {
    command: 'compose <ref>',
    describe: 'Rename (--rekey) or drop (--trim) tensors of a file: one new header object, every tensor shared',
  },
  lanes: {
    command: 'lanes <action> [arg]',
    describe: 'The lane catalog: ls | show <doc> | layout <lane> | derive <file|ref> --name N',
  },
  bind: {
    command: 'bind <target>',
    describe: 'Does a checkpoint bind to a lane? admit | derivable (priced steps) | refuse, from headers only',
  },
  pull: {
    command: 'pull <origin> [ref]',
    describe:
      'Fetch a repository revision (owner/name[@rev], or a ref; a variant, file, components or tensors of it) from an origin (omitted: $TENSORFS_ENDPOINT or the remote named origin): only missing objects, each verified',
  },
  push: {
    command: 'push <origin> <ref>',
    describe: 'Send a snapshot to an origin: only the objects it lacks, then move its ref by compare-and-swap',
  },
  serve: {
    command: 'serve',
    describe:
      'Serve the store (or an S3 bucket) over HTTP as a TensorFS hub and a Hugging Face download API (a pull-through cache with --upstream) until SIGTERM or Ctrl-C',
  },
  remote: {
    command: 'remote <action> [name] [url]',
    describe: 'Name origins: add NAME URL, ls, rm NAME (kept in remotes.json in the store folder)',
  },
  upload: {
    command: 'upload <folder> <repo>',
    describe:
      'Make a folder (files, .cozytensors variants, a portable export) a new tree on a branch (owner/name[@branch]), locally or --to an origin: only missing objects sent, then one compare-and-swap',
  },
  tag: {
    command: 'tag <revision> <tag>',
    describe:
      'Release a revision (owner/name@rev) as an immutable tag, locally or --to an origin; moving a tag is exit 7',
  },
  log: {
    command: 'log <branch>',
    describe: "List a branch's moves (owner/name[@branch]), newest first: time, author, message, previous -> new head",
  },
  download: {
    command: 'download <repo> <dir>',
    describe:
      "Write a revision's tree (owner/name[@rev]) as a plain folder: every file, each variant with its chunks/ (or --variant V, --file PATH), from the store or --from an origin",
  },
  diff: {
    command: 'diff <refA> <refB>',
    describe:
      'Compare two snapshots tensor by tensor (changed, renamed, added, removed), files, configs and the pull cost, from headers only',
  },
  env: {
    command: 'env',
    describe: 'Show the version, the store directory and whether it exists',
  },
} as const;
