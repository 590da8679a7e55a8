// The run list of the signed-in key and the form that starts a run.
import { age, api, el } from "./api.js";

const REFRESH_MS = 3000;

function modelChoices(options) {
  const refs = [];
  for (const provider of options.providers || []) {
    for (const id of provider.models || []) {
      refs.push(id.startsWith(provider.slug + ":") ? id : provider.slug + ":" + id);
    }
  }
  return refs;
}

export class RunsView {
  constructor(main, navigate, onAuthLost) {
    this.navigate = navigate;
    this.onAuthLost = onAuthLost;
    this.prompt = el("textarea", { id: "prompt", rows: 4, placeholder: "What should the agent do?", required: true });
    this.model = el("select", { id: "model" }, el("option", { value: "" }, "server default"));
    this.workspace = el("input", { id: "workspace", placeholder: "server default (absolute path)" });
    this.error = el("p", { class: "error", id: "start-error", role: "alert" });
    const form = el(
      "form",
      { id: "start", class: "card" },
      el("h2", { text: "Start a run" }),
      this.prompt,
      el(
        "div",
        { class: "row" },
        el("label", {}, "Model ", this.model),
        el("label", { class: "grow" }, "Workspace ", this.workspace),
        el("button", { type: "submit", id: "start-submit" }, "Start"),
      ),
      this.error,
    );
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.start();
    });
    this.body = el("tbody", { id: "runs-body" });
    const table = el(
      "table",
      { id: "runs", class: "runs" },
      el("thead", {}, el("tr", {}, ...["Run", "Status", "Model", "Session", "Started"].map((h) => el("th", { text: h })))),
      this.body,
    );
    main.replaceChildren(form, el("section", { class: "card" }, el("h2", { text: "Recent runs" }), table));
    this.loadModels();
    this.refresh();
    this.timer = setInterval(() => this.refresh(), REFRESH_MS);
  }

  dispose() {
    clearInterval(this.timer);
  }

  failed(err) {
    if (err.status === 401) this.onAuthLost();
    else this.error.textContent = err.message;
  }

  async loadModels() {
    try {
      const options = await api("GET", "/model/options");
      const current = options.provider && options.model ? options.provider + ":" + options.model : null;
      if (current) this.model.firstChild.textContent = "server default (" + current + ")";
      for (const ref of modelChoices(options)) this.model.append(el("option", { value: ref }, ref));
    } catch (err) {
      this.failed(err);
    }
  }

  async refresh() {
    let runs;
    try {
      runs = (await api("GET", "/runs")).data;
    } catch (err) {
      this.failed(err);
      return;
    }
    const rows = runs.map((run) => {
      const link = el("a", { href: "/console/runs/" + run.run_id, class: "run-link" }, run.run_id);
      link.addEventListener("click", (ev) => {
        ev.preventDefault();
        this.navigate("/console/runs/" + run.run_id);
      });
      return el(
        "tr",
        { "data-run-id": run.run_id },
        el("td", {}, link),
        el("td", {}, el("span", { class: "badge " + run.status, text: run.status })),
        el("td", { text: run.resolved_model || run.model || "" }),
        el("td", { class: "mono", text: run.session_id || "" }),
        el("td", { text: run.created_at ? age(run.created_at) : "" }),
      );
    });
    if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 5, class: "muted", text: "No runs yet." })));
    this.body.replaceChildren(...rows);
  }

  async start() {
    if (this.starting) return;
    this.starting = true;
    this.error.textContent = "";
    const body = { input: this.prompt.value };
    if (this.model.value) body.model = this.model.value;
    if (this.workspace.value.trim()) body.cwd = this.workspace.value.trim();
    try {
      const run = await api("POST", "/runs", body);
      this.navigate("/console/runs/" + run.run_id);
    } catch (err) {
      this.failed(err);
    } finally {
      this.starting = false;
    }
  }
}
