/**
 * The one glob dialect of every pattern a user types: `--tensors` and `--trim` (tensor names),
 * `--include` (repository paths), token scopes (repository names). picomatch's POSIX flavour
 * with `dot: true`, on every platform: `*` is any run without `/` (tensor names hold none, so it
 * spans a whole dotted name), `**` crosses `/`, `?` one character, `[...]` a class, `{a,b}`
 * alternatives, a leading `!` negates. lanes' rule globs (lane keys) go through it too.
 * picomatch's POSIX build reads no Node builtin and no `process`, so this runs in browsers.
 */
import picomatch from 'picomatch/posix.js';
import { wrongArgument } from './args.js';
import { TensorFSError } from './errors.js';

/**
 * A predicate true for a name that matches any of `patterns` (see the module comment for the
 * dialect); an empty list matches nothing. A pattern that is not a string is `invalid_argument`
 * (`glob.argument`), an empty one `invalid_argument` (`glob.empty_pattern`).
 */
export function globMatcher(patterns: string | readonly string[]): (name: string) => boolean {
  const list: readonly unknown[] = typeof patterns === 'string' ? [patterns] : Array.isArray(patterns) ? patterns : [];
  if (typeof patterns !== 'string' && !Array.isArray(patterns))
    wrongArgument('glob', 'patterns', 'a string or an array of strings', patterns);
  for (const p of list) {
    if (typeof p !== 'string') wrongArgument('glob', 'patterns[]', 'a string', p);
    if (p.length === 0)
      throw new TensorFSError(
        'invalid_argument',
        'a glob pattern is empty; name what to match (`*` matches any name)',
        {
          details: { rule: 'glob.empty_pattern' },
        },
      );
  }
  const match = picomatch(typeof patterns === 'string' ? patterns : [...patterns], { dot: true });
  return (name) => match(name); // one argument: as an array callback, picomatch's second would be `returnObject`
}
