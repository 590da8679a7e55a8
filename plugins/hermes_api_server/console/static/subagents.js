// The child agents a run started with delegate_task, built from its subagent.* events: one card
// per child, keyed by its subagent_id (a replayed or resumed stream updates the card it already
// has), nested under the child that spawned it. Everything the model wrote goes in as text.
import { el } from "./api.js";

const LIVE_TAIL = 4000; // characters of a child's running text kept on the page

export class SubagentPanel {
  constructor(add) {
    this.add = add; // puts the panel into the run's event list, the first time a child shows up
    this.children = new Map();
    this.section = null;
  }

  get(id) {
    return this.children.get(id);
  }

  receive(event) {
    const child = this.child(event);
    child.card.dataset.status = event.status || child.card.dataset.status;
    this.head(child, event);
    switch (event.event) {
      case "subagent.progress":
        child.text.textContent = (child.text.textContent + (event.text || "")).slice(-LIVE_TAIL);
        break;
      case "subagent.thinking":
        child.thinking.hidden = false;
        child.thinkingText.textContent = (child.thinkingText.textContent + (event.text || "")).slice(-LIVE_TAIL);
        break;
      case "subagent.tool":
        this.tool(child, event);
        break;
      case "subagent.complete":
        this.complete(child, event);
        break;
    }
  }

  child(event) {
    const id = event.subagent_id;
    let child = this.children.get(id);
    if (child) return child;
    const status = el("span", { class: "badge sub-status" });
    const asks = el("span", { class: "sub-asks" });
    const meta = el("span", { class: "muted sub-meta" });
    const usage = el("span", { class: "muted sub-usage" });
    const text = el("pre", { class: "sub-text" });
    const thinkingText = el("pre", {});
    const thinking = el("details", { class: "sub-thinking", hidden: true }, el("summary", { text: "reasoning" }), thinkingText);
    const steps = el("ol", { class: "sub-steps" });
    const result = el("div", { class: "sub-result" });
    const nested = el("div", { class: "sub-children" });
    const card = el(
      "div",
      { class: "subagent", "data-subagent": id, "data-depth": event.depth },
      el("div", { class: "sub-head" }, el("strong", { class: "sub-goal", text: event.goal || "" }), " ", status, " ", asks),
      el("div", {}, meta, " ", usage),
      steps,
      thinking,
      text,
      result,
      nested,
    );
    child = { card, status, asks, meta, usage, text, thinking, thinkingText, steps, result, nested, tools: new Map(), done: false };
    this.children.set(id, child);
    const parent = this.children.get(event.parent_id);
    (parent ? parent.nested : this.panel()).append(card);
    return child;
  }

  panel() {
    if (!this.section) {
      this.list = el("div", { class: "sub-list" });
      this.section = el("section", { class: "event subagents", id: "subagents" }, el("strong", { text: "Subagents" }), this.list);
      this.add(this.section);
    }
    return this.list;
  }

  head(child, event) {
    if (!child.done) {
      child.status.textContent = event.status || "running";
      child.status.className = "badge sub-status " + (event.status || "running");
    }
    const where = event.task_count > 1 ? "task " + (event.task_index + 1) + " of " + event.task_count : "task";
    const bits = [where, event.model, "depth " + event.depth];
    if (event.delegation_id) bits.push("background " + event.delegation_id);
    child.meta.textContent = bits.filter(Boolean).join(" · ");
    if (event.usage) child.usage.textContent = "· tokens in " + event.usage.input + ", out " + event.usage.output;
  }

  tool(child, event) {
    let step = child.tools.get(event.call_id);
    if (!step) {
      const state = el("span", { class: "step-state" });
      const node = el("li", { class: "sub-step running", "data-call": event.call_id }, el("code", { text: event.tool || "tool" }), " ", state);
      step = { node, state };
      child.tools.set(event.call_id, step);
      child.steps.append(node);
    }
    const state = event.phase === "done" ? (event.is_error ? "failed" : "done") : "running";
    step.node.className = "sub-step " + state;
    step.state.textContent = state === "running" ? "running…" : state;
  }

  complete(child, event) {
    child.done = true;
    this.asking(event.subagent_id, false);
    child.status.textContent = event.status;
    child.status.className = "badge sub-status " + event.status;
    child.card.classList.add("ended");
    const parts = [];
    if (event.summary) parts.push(el("pre", { class: "sub-summary", text: event.summary }));
    if (event.error) parts.push(el("p", { class: "error sub-error", text: event.error }));
    const facts = [event.tool_calls + " tool call" + (event.tool_calls === 1 ? "" : "s")];
    if (event.duration_s !== undefined) facts.push(event.duration_s + " s");
    parts.push(el("p", { class: "muted sub-facts", text: facts.join(" · ") }));
    child.result.replaceChildren(...parts);
    // The summary says it all; the running text stays only when there is no summary.
    if (event.summary) child.text.textContent = "";
  }

  // A child waits for (or no longer waits for) an approval it asked for.
  asking(id, open) {
    const child = this.children.get(id);
    if (!child) return;
    child.asks.textContent = open ? "waiting for approval" : "";
    child.card.classList.toggle("asking", open);
  }

  // How an approval card names the child that asked.
  describe(id) {
    const child = this.children.get(id);
    const goal = child ? child.card.querySelector(".sub-goal").textContent : "";
    return goal ? "Asked by subagent: " + goal : "Asked by subagent " + id;
  }
}
