// Tree keyboard navigation, as the WAI-ARIA tree pattern has it: arrows move (and select), Right
// opens or steps into a row, Left closes or steps out, Enter/Space activate, Home/End/PageUp/Down.
// Kept apart from the view so the key map reads in one place.

/** What the keys need from the tree view. */
export interface TreeNav {
  focus: number;
  readonly rowCount: number;
  /** Rows that fit in the view, for PageUp/PageDown. */
  pageRows(): number;
  expandable(index: number): boolean;
  isOpen(index: number): boolean;
  /** Filter results are a flat list: nothing opens or closes there. */
  readonly filtering: boolean;
  open(index: number): void;
  close(index: number): void;
  moveFocus(index: number): void;
  parentIndex(index: number): number;
  activate(index: number, fromKey: boolean): void;
}

/** Acts on `key`; returns false for a key the tree does not use (left to the page). */
export function treeKey(nav: TreeNav, key: string): boolean {
  const i = nav.focus;
  const page = Math.max(1, nav.pageRows() - 1);
  switch (key) {
    case "ArrowDown":
      nav.moveFocus(i + 1);
      break;
    case "ArrowUp":
      nav.moveFocus(i - 1);
      break;
    case "PageDown":
      nav.moveFocus(i + page);
      break;
    case "PageUp":
      nav.moveFocus(i - page);
      break;
    case "Home":
      nav.moveFocus(0);
      break;
    case "End":
      nav.moveFocus(nav.rowCount - 1);
      break;
    case "ArrowRight":
      if (!nav.filtering && nav.expandable(i)) {
        if (nav.isOpen(i)) nav.moveFocus(i + 1);
        else nav.open(i);
      }
      break;
    case "ArrowLeft":
      if (!nav.filtering && nav.isOpen(i)) nav.close(i);
      else nav.moveFocus(nav.parentIndex(i));
      break;
    case "Enter":
    case " ":
      nav.activate(i, true);
      break;
    default:
      return false;
  }
  return true;
}
