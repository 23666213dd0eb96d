/** The parts a {@link LocalStore} wires together, handed to the modules that do its jobs. */
import type { Db } from './db.js';
import type { Layout } from './layout.js';
import type { Objects } from './objects.js';

/** A local store's folders, its metadata connection and its object files. */
export interface StoreParts {
  readonly layout: Layout;
  readonly db: Db;
  readonly objects: Objects;
}
