// Constructor form for the selected module (Apply = edit) and the "Replace with..." catalog, whose
// chosen class's form the kernel prefills from the old module where parameter names match.
// Mirrors src/torchxray/forms.py through serialize.form_dict. What the person types is a draft of
// one form for one module: it goes when the selection changes, after Apply, or on Reset.
import { clear, h, uid } from "../dom";
import type { CatalogRow, EditRequest, Field, FormReply, ReplaceRequest } from "../protocol";
import { RpcError } from "../protocol";
import { messageOf, modelRev, type Ctx, type Pane } from "./context";

// Only "default" is a guess: "derived" values are read from the module's state
// (e.g. bias = module.bias is not None), so they get a neutral badge, not a warning.
const ORIGIN_BADGE: Record<string, [string, string, string]> = {
  derived: ["tx-derived", "derived", "read from the module's state (e.g. bias = module.bias is not None)"],
  recorded: ["tx-derived", "recorded", "recorded by record_init_args() when the module was built"],
  inferred: ["tx-derived", "inferred", "not stored on the module: inferred from its layers and checked by rebuilding it"],
  default: ["tx-guess", "guess", "guessed: not stored on the module, showing the signature default"],
};

const SUGGEST: Record<string, string[]> = {
  dtype: ["torch.float32", "torch.float16", "torch.bfloat16", "torch.float64"],
  device: ["cpu", "cuda", "meta"],
};

/** Builds the inputs for `fields` into `form`; returns a reader of the changed values. */
export function renderFields(
  form: HTMLElement,
  fields: Field[],
  errors: Map<string, HTMLElement>,
): (all: boolean) => Record<string, string> {
  const readers: [Field, () => string][] = [];
  // A config argument is a collapsible group of its fields: those the class reads first (the
  // kernel orders them), the others in a closed group of their own.
  const groups = new Map<string, [HTMLElement, HTMLElement | null]>();
  const holder = (f: Field): HTMLElement => {
    const g = f.group ? groups.get(f.group) : undefined;
    if (!g) return form;
    if (f.read !== false) return g[0];
    if (!g[1]) {
      g[1] = h("details", { class: "tx-group" }, h("summary", {}, "fields this class does not read"));
      g[0].appendChild(g[1]);
    }
    return g[1];
  };
  for (const f of fields) {
    if (f.kind === "config") {
      const box = h("details", { class: "tx-group", open: true }, h("summary", { title: f.annotation }, `${f.name}: ${f.text}`));
      groups.set(f.name, [box, null]);
      form.appendChild(box);
      continue;
    }
    const id = uid("f");
    const errId = `${id}-err`;
    // A config's fields sit in its group: the label is the part after "config.", whole (wrapped,
    // never cut: T5's relative_attention_num_buckets and ..._max_distance share 20 characters).
    const shown = f.group && f.name.startsWith(`${f.group}.`) ? f.name.slice(f.group.length + 1) : f.name;
    const label = h("label", { for: id, class: "tx-label", title: f.name }, shown);
    let input: HTMLInputElement | HTMLSelectElement;
    const options = f.kind === "bool" && f.optional ? ["True", "False", "None"] : f.choices;
    if (f.kind === "bool" && !f.optional) {
      input = h("input", { id, type: "checkbox", "aria-describedby": errId });
      input.checked = f.text === "True";
      readers.push([f, () => ((input as HTMLInputElement).checked ? "True" : "False")]);
    } else if ((f.kind === "choice" || f.kind === "bool") && options.length) {
      input = h("select", { id, "aria-describedby": errId });
      for (const c of options) input.appendChild(h("option", { value: c }, c));
      if (!options.includes(f.text)) input.appendChild(h("option", { value: f.text }, f.text));
      input.value = f.text;
      readers.push([f, () => input.value]);
    } else {
      input = h("input", {
        id,
        type: "text",
        spellcheck: "false",
        "aria-describedby": errId,
        placeholder: f.required ? "required" : "",
      });
      input.value = f.text;
      // Suggestions, not a closed list: e.g. padding "same" or a tuple, any callable.
      const hints = f.choices.length ? f.choices : (SUGGEST[f.kind] ?? []);
      if (hints.length) {
        const list = h("datalist", { id: `${id}-list` }, ...hints.map((c) => h("option", { value: c })));
        input.setAttribute("list", list.id);
        form.appendChild(list);
      }
      readers.push([f, () => input.value]);
    }
    input.dataset.kind = f.kind;
    input.dataset.field = f.name;
    const hint = h("span", { class: "tx-kind", title: f.annotation || f.kind }, f.kind);
    const badge = ORIGIN_BADGE[f.origin];
    const origin = badge ? h("span", { class: badge[0], title: badge[2] }, badge[1]) : null;
    const err = h("div", { class: "tx-fielderr", id: errId });
    errors.set(f.name, err);
    const note = f.note ? h("div", { class: "tx-muted" }, f.note) : null;
    holder(f).appendChild(h("div", { class: "tx-field" }, label, input, hint, origin, err, note));
  }
  return (all: boolean) => {
    const out: Record<string, string> = {};
    for (const [f, read] of readers) {
      const v = read();
      if (all ? v !== "" || f.required : v !== f.text) out[f.name] = v;
    }
    return out;
  };
}

/** What was typed into a form: per field, the text the form showed and the value typed over it. */
type Draft = { path: string; typed: Map<string, [string, string]> };

/** Puts typed values back into a form rebuilt for the same module, for the fields whose shown
 * text is still the one they were typed over (a refresh that changed nothing under them). */
function restoreDraft(form: HTMLElement, fields: Field[], draft: Draft): void {
  for (const f of fields) {
    const got = draft.typed.get(f.name);
    if (!got || got[0] !== f.text) continue;
    for (const el of form.querySelectorAll<HTMLInputElement | HTMLSelectElement>("[data-field]")) {
      if (el.dataset.field !== f.name) continue;
      if (el instanceof HTMLInputElement && el.type === "checkbox") el.checked = got[1] === "True";
      else el.value = got[1];
    }
  }
}

export class FormPane implements Pane {
  readonly el = h("div", { class: "tx-formpane" });
  private shown: string | null = null;
  private seq = 0;
  // The form on screen: its module and a reader of what was typed into it, so that a refresh
  // (the model changed elsewhere, a probe landed) keeps what the person typed.
  private current: { path: string; texts: Map<string, string>; read: (all: boolean) => Record<string, string> } | null = null;
  constructor(private readonly ctx: Ctx) {}

  private draft(): Draft | null {
    const c = this.current;
    if (!c) return null;
    const typed = new Map<string, [string, string]>();
    for (const [name, value] of Object.entries(c.read(false))) typed.set(name, [c.texts.get(name) ?? "", value]);
    return { path: c.path, typed };
  }

  async show(force = false): Promise<void> {
    const path = this.ctx.model.get("selected");
    const key = `${path}@${modelRev(this.ctx)}`;
    if (key === this.shown && !force) return;
    this.shown = key;
    const seq = ++this.seq;
    try {
      const r = await this.ctx.rpc.call({ kind: "form", path });
      if (seq === this.seq) this.renderEdit(r);
    } catch (e) {
      if (seq !== this.seq) return;
      this.shown = null;
      clear(this.el);
      this.el.appendChild(h("p", { class: "tx-note" }, messageOf(e)));
    }
  }

  selectionChanged(): void {
    this.seq += 1; // a reply still on its way is for the old module
    this.shown = null;
    this.current = null; // a draft belongs to one module
    clear(this.el);
  }

  private header(text: string): HTMLElement {
    return h("h4", {}, text);
  }

  private renderEdit(r: FormReply): void {
    const draft = this.draft();
    clear(this.el);
    const form = h("form", { class: "tx-form", "aria-label": `${r.cls} hyperparameters` });
    const errors = new Map<string, HTMLElement>();
    const read = renderFields(form, r.fields, errors);
    if (draft && draft.path === r.path) restoreDraft(form, r.fields, draft);
    this.current = { path: r.path, texts: new Map(r.fields.map((f) => [f.name, f.text])), read };
    const general = h("div", { class: "tx-fielderr", role: "alert" });
    const apply = h("button", { type: "submit", class: "tx-primary" }, "Apply");
    const replace = h("button", { type: "button" }, "Replace with...");
    const reset = h("button", { type: "button", title: "Forget the changes typed here: show the live values" }, "Reset");
    if (this.ctx.readonly || r.refusal) {
      apply.disabled = true;
      replace.disabled = true;
    }
    reset.addEventListener("click", () => {
      this.current = null; // forget what was typed
      void this.show(true);
    });
    form.append(general, h("div", { class: "tx-buttons" }, apply, reset, replace));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const changes = read(false);
      void this.submit(errors, general, { kind: "edit", path: r.path, changes, rev: r.rev });
    });
    replace.addEventListener("click", () => this.openCatalog(r));
    if (!r.fields.length) form.prepend(h("p", { class: "tx-muted" }, "This constructor takes no parameters."));
    if (r.hint) form.prepend(h("p", { class: "tx-note", role: "note" }, r.hint));
    // Said before Apply: a rebuild that would not be the live module, or a model that cannot be
    // patched at all.
    if (r.inexact) form.prepend(h("p", { class: "tx-inexact", role: "note" }, r.inexact));
    if (r.refusal) form.prepend(h("p", { class: "tx-inexact", role: "note" }, `Apply is off: ${r.refusal}`));
    this.el.append(this.header(`${r.cls}(…) at ${r.path || "(model)"}`), form);
  }

  private async submit(
    errors: Map<string, HTMLElement>,
    general: HTMLElement,
    msg: EditRequest | ReplaceRequest,
  ): Promise<void> {
    for (const e of errors.values()) e.textContent = "";
    general.textContent = "";
    const done = await this.ctx.run(msg.kind, async () => {
      try {
        return await this.ctx.rpc.call(msg);
      } catch (e) {
        if (e instanceof RpcError && e.fields.__confirm__ && msg.kind === "edit") {
          // Too large to build unasked: the estimate, and a button that sends it again, confirmed.
          const anyway = h("button", { type: "button", class: "tx-primary" }, "Build anyway");
          anyway.addEventListener("click", () => void this.submit(errors, general, { ...msg, confirm: true }));
          general.append(e.fields.__confirm__, " ", anyway);
          return null;
        }
        if (e instanceof RpcError && e.fields.__inexact__ && msg.kind === "edit") {
          // The edit would change parts it does not name: what, and a button that applies anyway.
          const anyway = h("button", { type: "button", class: "tx-primary" }, "Apply anyway");
          anyway.addEventListener("click", () => void this.submit(errors, general, { ...msg, inexact_ok: true }));
          general.append(e.fields.__inexact__, " ", anyway);
          return null;
        }
        if (e instanceof RpcError && Object.keys(e.fields).length) {
          for (const [name, m] of Object.entries(e.fields)) {
            const slot = errors.get(name);
            if (slot) slot.textContent = m;
            // "__all__" (the form's own reason) and "__init__" (the constructor's) name no field.
            else general.textContent += name.startsWith("__") ? `${m} ` : `${name}: ${m} `;
          }
          return null;
        }
        general.textContent = messageOf(e);
        throw e;
      }
    });
    if (done) {
      this.shown = null;
      this.current = null; // applied: the form shows the live values again
      await this.show(true);
    }
  }

  private openCatalog(target: FormReply): void {
    this.seq += 1; // a form still loading must not replace the catalog
    clear(this.el);
    const search = h("input", { type: "search", "aria-label": "Search classes", placeholder: "search classes" });
    const list = h("div", { class: "tx-catalog", role: "list" });
    const cancel = h("button", { type: "button" }, "Cancel");
    cancel.addEventListener("click", () => this.renderEdit(target));
    this.el.append(
      this.header(`Replace ${target.path || "(model)"} (${target.cls}) with…`),
      h("div", { class: "tx-buttons" }, search, cancel),
      list,
    );
    let seq = 0;
    const refresh = async () => {
      const mine = ++seq;
      try {
        const r = await this.ctx.rpc.call({
          kind: "catalog",
          query: search.value,
          path: target.path,
        });
        if (mine !== seq) return;
        clear(list);
        for (const entry of r.entries) {
          const b = h("button", { type: "button", class: "tx-entry", title: entry.doc }, entry.name);
          b.addEventListener("click", () => void this.chooseClass(target, entry));
          list.appendChild(
            h("div", { role: "listitem" }, b, h("span", { class: "tx-muted" }, ` ${entry.group} · ${entry.qualname}`)),
          );
        }
        if (!r.entries.length) list.appendChild(h("p", { class: "tx-muted" }, "no class matches"));
      } catch (e) {
        if (mine === seq) this.ctx.error(messageOf(e));
      }
    };
    let timer: ReturnType<typeof setTimeout> | undefined;
    search.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => void refresh(), 150);
    });
    void refresh();
    search.focus();
  }

  private async chooseClass(target: FormReply, entry: CatalogRow): Promise<void> {
    let r: FormReply;
    try {
      r = await this.ctx.rpc.call({ kind: "form", cls: entry.qualname, prefill: target.path });
    } catch (e) {
      this.ctx.error(messageOf(e));
      return;
    }
    clear(this.el);
    const form = h("form", { class: "tx-form", "aria-label": `${r.cls} hyperparameters` });
    const errors = new Map<string, HTMLElement>();
    const read = renderFields(form, r.fields, errors);
    const general = h("div", { class: "tx-fielderr", role: "alert" });
    const which = h("select", { id: uid("which") });
    which.append(h("option", { value: "all" }, "every path to this module"), h("option", { value: "this" }, "this path only"));
    const go = h("button", { type: "submit", class: "tx-primary" }, "Replace");
    const back = h("button", { type: "button" }, "Cancel");
    back.addEventListener("click", () => this.renderEdit(target));
    const reset = h("button", { type: "button", title: "Forget the changes typed here" }, "Reset");
    reset.addEventListener("click", () => void this.chooseClass(target, entry));
    if (target.aliases?.length) form.appendChild(h("div", { class: "tx-field" }, h("label", { for: which.id }, "which"), which));
    form.append(general, h("div", { class: "tx-buttons" }, go, reset, back));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      void this.submit(errors, general, {
        kind: "replace",
        path: target.path,
        cls: r.qualname,
        changes: read(true),
        which: which.value as ReplaceRequest["which"],
        rev: target.rev,
      });
    });
    this.el.append(this.header(`Replace ${target.path || "(model)"} with ${r.cls}(…)`), form);
  }
}
