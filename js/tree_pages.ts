// What the tree reads from the kernel (`TreeSource`), and how rows a person loaded with "more"
// survive a new tree state (a probe's results, a patch): the state carries only each list's first
// page, so the lists are loaded again up to where they were.
import type { Item, MoreRow, Page } from "./protocol";
import { isMore } from "./protocol";
import type { FilterResult } from "./tree_filter";

export interface TreeSource {
  children(parent: string, offset: number, limit: number, unfold: boolean): Promise<Page>;
  filter(query: string, regex: boolean, names: boolean): Promise<FilterResult>;
  reveal?(path: string): Promise<{ chain: { parent: string; index: number }[] }>;
}

/** How far each list was loaded: the offset of its "more" row, or Infinity when it has none. */
export function extents(lists: Map<string, Item[]>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [key, items] of lists) {
    const more = items.find(isMore);
    out.set(key, more ? more.offset : Number.POSITIVE_INFINITY);
  }
  return out;
}

/** The "more" row of `items` to fetch so that the list reaches `extent` again, and how many rows
 * to ask for; null when the list already reaches it. */
export function refetch(items: Item[], extent: number | undefined): { more: MoreRow; limit: number } | null {
  const more = items.find(isMore);
  if (!more || extent === undefined || extent <= more.offset) return null;
  return { more, limit: Math.min(more.more, extent - more.offset) };
}

/** Loads every list of `lists` again up to its extent in `reached` (from `extents`). */
export async function reload(
  lists: Map<string, Item[]>,
  reached: Map<string, number>,
  fetch: (more: MoreRow, limit: number) => Promise<Page | null>,
): Promise<void> {
  for (const [key, items] of lists) {
    const again = refetch(items, reached.get(key));
    const page = again && (await fetch(again.more, again.limit));
    if (again && page) items.splice(items.indexOf(again.more), 1, ...page.items);
  }
}
