/**
 * The one glob dialect of every pattern a user types: `--tensors` and `--trim` (tensor names),
 * `--include` (repository paths), token scopes (repository names). picomatch's POSIX flavour
 * with `dot: true`, on every platform: `*` is any run without `/` (tensor names hold none, so it
 * spans a whole dotted name), `**` crosses `/`, `?` one character, `[...]` a class, `{a,b}`
 * alternatives, a leading `!` negates. lanes' rule globs (lane keys) go through it too.
 * picomatch's POSIX build reads no Node builtin and no `process`, so this runs in browsers.
 */
import picomatch from 'picomatch/posix.js';

/** A predicate true for a name that matches any of `patterns` (see the module comment for the dialect). */
export function globMatcher(patterns: string | readonly string[]): (name: string) => boolean {
  const match = picomatch(typeof patterns === 'string' ? patterns : [...patterns], { dot: true });
  return (name) => match(name); // one argument: as an array callback, picomatch's second would be `returnObject`
}
