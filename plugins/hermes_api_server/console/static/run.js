// One run, live: its events from /console/api/runs/{id}/events rendered as they arrive, and the
// controls that answer it (approvals, steer, stop). Every event is shown once, in seq order. Once
// the run has ended, the box at the bottom sends a follow-up instead: a new run in the same session.
import { api, el } from "./api.js";
import { renderMarkdown } from "./markdown.js";
import { SubagentPanel } from "./subagents.js";

const TERMINAL = new Set(["run.completed", "run.failed", "run.cancelled", "run.interrupted"]);
const ENDED = ["completed", "failed", "cancelled", "interrupted"];
const RETRY_MS = 1000;

export class RunView {
  constructor(main, runId, onAuthLost, navigate) {
    this.runId = runId;
    this.onAuthLost = onAuthLost;
    this.navigate = navigate;
    this.sessionId = null;
    this.model = null;
    this.lastSeq = 0;
    this.message = null;
    this.tools = new Map();
    this.approvals = new Map();
    this.steers = [];
    this.subagents = new SubagentPanel((node) => this.add(node));
    this.ended = false;
    this.facts = { runId, seqs: [], duplicates: 0, missing: 0, firstEventAt: null, text: "", reconnects: 0 };
    window.hermesConsole.run = this.facts;

    this.status = el("span", { id: "status", class: "badge", text: "…" });
    this.meta = el("span", { id: "run-meta", class: "muted" });
    this.notice = el("p", { id: "notice", class: "notice", role: "status" });
    this.events = el("div", { id: "events", class: "events", "aria-live": "polite" });
    this.steerInput = el("input", { id: "steer", placeholder: "Steer the run (reaches the model after its next tool)", autocomplete: "off" });
    this.steerButton = el("button", { type: "submit", id: "steer-submit" }, "Steer");
    this.stopButton = el("button", { type: "button", id: "stop", class: "danger" }, "Stop");
    this.error = el("p", { id: "run-error", class: "error", role: "alert" });
    const steerForm = el("form", { id: "steer-form", class: "controls" }, this.steerInput, this.steerButton, this.stopButton);
    steerForm.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.steer();
    });
    this.stopButton.addEventListener("click", () => this.stop());
    this.steerForm = steerForm;
    this.followInput = el("input", { id: "followup", placeholder: "Follow up in this session (starts a new run)", autocomplete: "off" });
    this.followButton = el("button", { type: "submit", id: "followup-submit" }, "Send");
    const followLabel = el("label", { for: "followup", class: "muted follow-label", text: "Follow up" });
    this.followForm = el("form", { id: "followup-form", class: "controls", hidden: true }, followLabel, this.followInput, this.followButton);
    this.followForm.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.followUp();
    });
    main.replaceChildren(
      el("section", { class: "card run-head" }, el("h2", {}, "Run ", el("code", { text: runId })), this.status, this.meta),
      this.notice,
      this.events,
      el("section", { class: "card sticky" }, steerForm, this.followForm, this.error),
    );
    this.ticker = setInterval(() => this.tick(), 1000);
    this.loadStatus();
    this.connect();
  }

  dispose() {
    this.ended = true;
    clearInterval(this.ticker);
    clearTimeout(this.retry);
    if (this.source) this.source.close();
  }

  async loadStatus() {
    try {
      const run = await api("GET", "/runs/" + this.runId);
      if (!this.facts.seqs.length || !TERMINAL.has(this.lastEvent)) {
        let status = run.status;
        if (this.facts.seqs.length) {
          // Events already shown are newer than this snapshot: the open approvals decide.
          if (this.approvals.size) status = "waiting_for_approval";
          else if (status === "waiting_for_approval") status = "running";
        }
        this.setStatus(status);
      }
      this.sessionId = run.session_id;
      this.model = run.model;
      this.meta.textContent = [run.resolved_model || run.model, "session " + run.session_id].filter(Boolean).join(" · ");
    } catch (err) {
      if (err.status === 401) this.onAuthLost();
      else if (err.status === 404) this.gone();
      else this.error.textContent = err.message;
    }
  }

  // Unknown, expired or another key's run: nothing to show and nothing to answer.
  gone() {
    this.ended = true;
    clearTimeout(this.retry);
    if (this.source) this.source.close();
    this.notice.textContent = "This run does not exist (or belongs to another key).";
    this.status.textContent = "not found";
    this.status.className = "badge";
    this.stopButton.disabled = true;
    this.steerButton.disabled = true;
    this.followForm.hidden = true;
    this.steerForm.hidden = false;
  }

  // EventSource resends Last-Event-ID by itself when a connection drops; a stream it gave up
  // on is opened again with ?after= the last seq shown, so nothing is repeated or skipped.
  connect() {
    const url = "/console/api/runs/" + this.runId + "/events" + (this.lastSeq ? "?after=" + this.lastSeq : "");
    const source = new EventSource(url);
    this.source = source;
    source.onopen = () => {
      this.notice.textContent = "";
    };
    source.onmessage = (msg) => this.receive(JSON.parse(msg.data));
    source.onerror = () => {
      if (this.ended) return;
      this.facts.reconnects += 1;
      if (source.readyState === EventSource.CLOSED) {
        this.notice.textContent = "Connection lost; reconnecting…";
        this.retry = setTimeout(() => this.recover(), RETRY_MS);
      } else {
        this.notice.textContent = "Connection lost; resuming from event " + this.lastSeq + "…";
      }
    };
  }

  async recover() {
    try {
      await api("GET", "/runs/" + this.runId);
    } catch (err) {
      if (err.status === 401) return this.onAuthLost();
      if (err.status === 404) return this.gone();
    }
    if (!this.ended) this.connect();
  }

  receive(event) {
    if (event.event === "stream.gap") {
      this.facts.missing += event.to_seq - event.from_seq + 1;
      this.add(el("div", { class: "event gap", text: `Events ${event.from_seq}–${event.to_seq} are no longer kept by the server.` }));
      this.lastSeq = Math.max(this.lastSeq, event.to_seq);
      return;
    }
    const seq = event.seq;
    if (seq <= this.lastSeq) {
      this.facts.duplicates += 1;
      return;
    }
    if (seq !== this.lastSeq + 1) this.facts.missing += seq - this.lastSeq - 1;
    this.lastSeq = seq;
    this.lastEvent = event.event;
    this.facts.seqs.push(seq);
    this.show(event);
    if (this.facts.firstEventAt === null) this.facts.firstEventAt = performance.now();
    if (TERMINAL.has(event.event)) {
      this.ended = true;
      this.source.close();
      this.notice.textContent = "";
    }
  }

  add(node) {
    const stick = this.nearBottom();
    this.events.append(node);
    if (stick) node.scrollIntoView({ block: "end" });
  }

  nearBottom() {
    const doc = document.scrollingElement;
    return doc.scrollHeight - doc.scrollTop - doc.clientHeight < 120;
  }

  setStatus(status) {
    this.status.textContent = status;
    this.status.className = "badge " + status;
    const done = ENDED.includes(status);
    this.stopButton.disabled = done || status === "stopping";
    this.steerButton.disabled = done;
    if (done && this.followForm.hidden) this.offerFollowUp();
  }

  // The run is over: steering has nowhere to go, so the box becomes a follow-up. Text typed for a
  // steer that never left moves over, so nothing typed is lost.
  offerFollowUp() {
    const typed = this.steerInput.value.trim();
    if (typed && !this.followInput.value) this.followInput.value = typed;
    this.steerInput.value = "";
    const focused = document.activeElement === this.steerInput;
    this.steerForm.hidden = true;
    this.followForm.hidden = false;
    if (focused) this.followInput.focus();
  }

  show(event) {
    const kind = event.event;
    if (kind !== "message.delta") this.message = null;
    switch (kind) {
      case "run.started":
        this.setStatus("running");
        this.add(el("div", { class: "event started", "data-seq": event.seq, text: "Started with " + (event.resolved_model || event.model) }));
        break;
      case "message.delta":
        this.delta(event);
        break;
      case "reasoning.delta":
        this.add(el("details", { class: "event reasoning", "data-seq": event.seq }, el("summary", { text: "reasoning" }), el("pre", { text: event.delta })));
        break;
      case "tool.started":
        this.toolStarted(event);
        break;
      case "tool.progress":
        this.toolProgress(event);
        break;
      case "tool.completed":
        this.toolCompleted(event);
        break;
      case "approval.request":
        this.setStatus("waiting_for_approval");
        this.approvalRequest(event);
        break;
      case "approval.responded":
        this.approvalClosed(event.request_id, "answered: " + event.choice, "answered");
        break;
      case "approval.expired":
        this.approvalClosed(event.request_id, "expired (" + event.reason + "): denied", "expired");
        break;
      case "run.steered": {
        const mine = this.sentSteers && this.sentSteers.shift();
        const state = el("span", { class: "steer-state", text: "queued" });
        const node = el("div", { class: "event steer queued", "data-seq": event.seq }, "Steer ", mine ? el("q", { text: mine }) : "", " — ", state);
        this.steers.push({ node, state });
        this.add(node);
        break;
      }
      case "run.steer_delivered": {
        const open = this.steers.find((s) => s.node.classList.contains("queued"));
        if (open) {
          open.node.classList.replace("queued", "delivered");
          open.state.textContent = "delivered";
        }
        this.add(el("div", { class: "event steer-delivered", "data-seq": event.seq, text: `Steer delivered to the model (${event.chars} characters)` }));
        break;
      }
      case "run.stopping":
        this.setStatus("stopping");
        this.add(el("div", { class: "event stopping", "data-seq": event.seq, text: "Stopping…" }));
        break;
      default:
        if (kind.startsWith("subagent.")) this.subagents.receive(event);
        else if (TERMINAL.has(kind)) this.terminal(event);
        else this.add(el("div", { class: "event other", "data-seq": event.seq, text: kind }));
    }
  }

  delta(event) {
    this.facts.text += event.delta;
    if (!this.message) {
      const node = el("div", { class: "event message", "data-seq": event.seq });
      this.message = { node, text: "", frame: 0 };
      this.add(node);
    }
    const message = this.message;
    message.text += event.delta;
    if (!message.frame) this.paint(message);
  }

  // Render a growing message at most once a frame, and less often as it grows: the time between
  // two renders is at least four times what the last one cost, so the page stays responsive
  // however long the text gets.
  paint(message) {
    message.frame = requestAnimationFrame(() => {
      const wait = (message.cost || 0) * 4 - (performance.now() - (message.paintedAt || 0));
      if (wait > 0) {
        message.frame = setTimeout(() => this.paint(message), wait);
        return;
      }
      const began = performance.now();
      const stick = this.nearBottom();
      message.node.replaceChildren(renderMarkdown(message.text));
      if (stick) document.scrollingElement.scrollTop = document.scrollingElement.scrollHeight;
      message.paintedAt = performance.now();
      message.cost = message.paintedAt - began;
      message.frame = 0;
    });
  }

  toolStarted(event) {
    const state = el("span", { class: "tool-state", text: "running…" });
    const output = el("pre", { class: "tool-output" });
    const card = el(
      "div",
      { class: "event tool running", "data-seq": event.seq, "data-call": event.tool_call_id },
      el("div", { class: "tool-head" }, el("strong", { text: event.tool }), " ", state),
      event.preview ? el("pre", { class: "tool-preview", text: event.preview }) : null,
      event.diff ? diffView(event.diff) : null,
      output,
    );
    this.tools.set(event.tool_call_id, { card, state, output });
    this.add(card);
  }

  toolProgress(event) {
    const tool = this.tools.get(event.tool_call_id);
    if (tool) tool.output.textContent += event.chunk;
  }

  toolCompleted(event) {
    let tool = this.tools.get(event.tool_call_id);
    if (!tool) {
      this.toolStarted({ seq: event.seq, tool: event.tool, tool_call_id: event.tool_call_id, preview: "" });
      tool = this.tools.get(event.tool_call_id);
    }
    tool.card.classList.replace("running", event.error ? "failed" : "done");
    tool.state.textContent = (event.error ? "failed" : "done") + " in " + event.duration + " s";
    if (event.diff) {
      // The change as made replaces the change as proposed.
      const proposed = tool.card.querySelector(".diff");
      if (proposed) proposed.replaceWith(diffView(event.diff));
      else tool.output.before(diffView(event.diff));
    }
    if (event.result && !tool.output.textContent) tool.output.textContent = event.result;
  }

  approvalRequest(event) {
    const child = event.task_id;
    if (child) this.subagents.asking(child, true);
    const left = el("span", { class: "expiry" });
    const buttons = (event.choices || ["once", "deny"]).map((choice) =>
      el("button", { type: "button", class: "choice " + choice, "data-choice": choice, onclick: () => this.answer(event.request_id, choice) }, label(choice)),
    );
    const card = el(
      "div",
      { class: "event approval open", "data-seq": event.seq, "data-request": event.request_id, "data-subagent": child },
      el("div", { class: "tool-head" }, el("strong", { text: "Approval needed: " + event.tool }), " ", left),
      child ? el("p", { class: "asked-by", text: this.subagents.describe(child) }) : null,
      el("pre", { class: "command", text: event.command || "" }),
      event.description ? el("p", { text: event.description }) : null,
      el("div", { class: "choices" }, ...buttons),
    );
    this.approvals.set(event.request_id, { card, left, buttons, expiresAt: event.expires_at, child });
    this.tick();
    this.add(card);
  }

  approvalClosed(requestId, text, cls) {
    const approval = this.approvals.get(requestId);
    if (!approval) return;
    approval.card.classList.replace("open", cls);
    approval.left.textContent = text;
    for (const b of approval.buttons) b.disabled = true;
    this.approvals.delete(requestId);
    if (approval.child && ![...this.approvals.values()].some((a) => a.child === approval.child)) this.subagents.asking(approval.child, false);
    if (!this.approvals.size && this.status.textContent === "waiting_for_approval") this.setStatus("running");
  }

  tick() {
    const now = Date.now() / 1000;
    for (const a of this.approvals.values()) {
      const s = Math.max(0, Math.round(a.expiresAt - now));
      a.left.textContent = "expires in " + (s >= 60 ? Math.floor(s / 60) + "m " + (s % 60) + "s" : s + "s");
    }
  }

  terminal(event) {
    const status = event.event.slice(4);
    this.setStatus(status);
    const parts = [el("strong", { text: "Run " + status })];
    if (event.error) parts.push(el("p", { class: "error", text: event.error + (event.error_code ? " (" + event.error_code + ")" : "") }));
    if (event.usage) {
      const usage = Object.entries(event.usage).map(([k, v]) => k.replace(/_/g, " ") + ": " + v).join(" · ");
      parts.push(el("p", { class: "usage", id: "usage", text: usage }));
    }
    if (event.pending_steer) {
      for (const s of this.steers) {
        if (s.node.classList.contains("queued")) {
          s.node.classList.replace("queued", "pending");
          s.state.textContent = "not delivered; returned as pending";
        }
      }
      parts.push(el("p", { class: "pending-steer" }, "Steer returned undelivered: ", el("q", { text: event.pending_steer })));
    }
    this.add(el("div", { class: "event terminal " + status, "data-seq": event.seq }, ...parts));
  }

  async answer(requestId, choice) {
    this.error.textContent = "";
    try {
      await api("POST", "/runs/" + this.runId + "/approval", { request_id: requestId, choice });
    } catch (err) {
      if (err.status === 401) this.onAuthLost();
      else this.error.textContent = err.message;
    }
  }

  async steer() {
    const text = this.steerInput.value.trim();
    if (!text) return;
    this.error.textContent = "";
    this.sentSteers = this.sentSteers || [];
    this.sentSteers.push(text);
    try {
      await api("POST", "/runs/" + this.runId + "/steer", { input: text });
      this.steerInput.value = "";
    } catch (err) {
      this.sentSteers.pop();
      if (err.status === 401) this.onAuthLost();
      else this.error.textContent = err.message;
    }
  }

  // A new run in this run's session, with the model this run asked for; the page moves to it.
  async followUp() {
    const text = this.followInput.value.trim();
    if (!text || this.following) return;
    this.following = true;
    this.followButton.disabled = true;
    this.error.textContent = "";
    try {
      if (!this.sessionId) {
        const run = await api("GET", "/runs/" + this.runId);
        this.sessionId = run.session_id;
        this.model = run.model;
      }
      const body = { input: text, session_id: this.sessionId };
      if (this.model) body.model = this.model;
      const run = await api("POST", "/runs", body);
      this.followInput.value = "";
      this.navigate("/console/runs/" + run.run_id);
    } catch (err) {
      if (err.status === 401) this.onAuthLost();
      else this.error.textContent = err.message;
    } finally {
      this.following = false;
      this.followButton.disabled = false;
    }
  }

  async stop() {
    this.error.textContent = "";
    try {
      const reply = await api("POST", "/runs/" + this.runId + "/stop");
      if (!this.ended) this.setStatus(reply.status);
    } catch (err) {
      if (err.status === 401) this.onAuthLost();
      else this.error.textContent = err.message;
    }
  }
}

function label(choice) {
  return { once: "Allow once", session: "Allow for session", always: "Always allow", deny: "Deny" }[choice] || choice;
}

function diffView(diff) {
  const pre = el("pre", { class: "diff" });
  for (const line of diff.replace(/\n$/, "").split("\n")) {
    const cls = line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : line.startsWith("@@") ? "hunk" : "";
    pre.append(el("span", { class: cls, text: line + "\n" }));
  }
  return pre;
}
