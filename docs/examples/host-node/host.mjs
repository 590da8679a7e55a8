// A small host that drives `hermes tui` over stdio through scenario files (Node 18+, no packages).
//
// It is an example of a host's own test suite (docs/integrating.md#testing-your-host-with-scenarios):
// for each scenario it starts `hermes tui` with HERMES_MODEL=mock:scenario:PATH, sends every turn's
// prompt, answers each question with the answer the scenario expects (read with
// `hermes scenario show`, so no TOML parser is needed), and prints one JSON summary line per
// scenario: what a user of the host would have seen.
//
//     node host.mjs [SCENARIO.toml ...]     (no argument: every shipped scenario)
//
// Set HERMES to the command to run (default `hermes`). The exit code is 1 when a turn's final
// text is not the end of what streamed.

import { execFileSync, spawn } from "node:child_process";
import { createInterface } from "node:readline";

const HERMES = process.env.HERMES || "hermes";
const TIMEOUT_MS = 30_000;

class Gateway {
  constructor(scenario) {
    this.proc = spawn(HERMES, ["tui"], {
      env: { ...process.env, HERMES_MODEL: `mock:scenario:${scenario}` },
      stdio: ["pipe", "pipe", "inherit"],
    });
    this.frames = [];
    this.waiters = [];
    this.nextId = 1;
    this.exited = false;
    createInterface({ input: this.proc.stdout }).on("line", (line) => {
      this.frames.push(JSON.parse(line));
      this.wake();
    });
    this.proc.on("exit", () => {
      this.exited = true;
      this.wake();
    });
  }

  wake() {
    for (const resolve of this.waiters.splice(0)) resolve();
  }

  async next() {
    const deadline = Date.now() + TIMEOUT_MS;
    while (this.frames.length === 0) {
      if (this.exited) throw new Error("hermes tui exited");
      if (Date.now() > deadline) throw new Error("no frame in time");
      await new Promise((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 1000);
      });
    }
    return this.frames.shift();
  }

  send(method, params = {}) {
    const id = this.nextId++;
    this.proc.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    return id;
  }

  async close() {
    this.proc.stdin.end(); // end of input: the gateway shuts down
    if (!this.exited) await new Promise((resolve) => this.proc.on("exit", resolve));
  }
}

function expectedAnswers(scenario, turn) {
  const answers = turn.steps.flatMap((step) => step.expect);
  const goals = turn.steps
    .flatMap((step) => step.tool_calls)
    .filter((call) => call.name === "delegate_task")
    .map((call) => JSON.parse(call.arguments).goal);
  for (const sub of scenario.subagents) {
    if (goals.includes(sub.goal)) answers.push(...sub.steps.flatMap((step) => step.expect));
  }
  return answers;
}

// What the host shows besides the reply: steers delivered, problems, titles, background results.
function notice(kind, payload) {
  if (kind === "status.update" && payload.kind === "steer") return "steer delivered";
  if (kind === "error") return `problem: ${payload.message}`;
  if (kind === "session.title") return `title: ${payload.title}`;
  if (kind === "background.complete") return `background ${payload.status}: ${payload.text}`;
  return null;
}

// Send one prompt and follow its events to message.complete; then send the turn's background
// prompt and wait for its result, and wait for the model-written title.
async function runTurn(gw, sessionId, turn, answers, title) {
  gw.send("prompt.submit", { session_id: sessionId, text: turn.user });
  const streamed = [];
  const tools = [];
  const asked = [];
  const notices = [];
  let summary = null;
  let background = turn.background;
  for (;;) {
    const frame = await gw.next();
    if (frame.method !== "event") {
      if (frame.error) throw new Error(`request failed: ${JSON.stringify(frame.error)}`);
      continue;
    }
    const kind = frame.params.type;
    const payload = frame.params.payload || {};
    const shown = notice(kind, payload);
    if (shown !== null) notices.push(shown);
    if (kind === "message.delta") streamed.push(payload.text);
    else if (kind === "tool.start") tools.push(payload.name);
    else if (kind === "approval.request" || kind === "clarify.request") {
      const question = kind.split(".")[0];
      const answer = answers.splice(answers.findIndex((a) => a.kind === question), 1)[0];
      asked.push(`${question}=${answer.answer}`);
      if (answer.steer) gw.send("session.steer", { session_id: sessionId, text: answer.steer });
      if (question === "approval") {
        gw.send("approval.respond", { session_id: sessionId, request_id: payload.request_id, choice: answer.answer });
      } else {
        gw.send("clarify.respond", { request_id: payload.request_id, answer: answer.answer });
      }
    } else if (kind === "message.complete") {
      const all = streamed.join("");
      // The final text replaces what streamed; it is the last segment's text.
      summary = {
        questions: asked,
        status: payload.status,
        streamed: all,
        streamed_matches: all.endsWith(payload.text),
        text: payload.text,
        tools,
      };
      if (background) gw.send("prompt.background", { session_id: sessionId, text: background });
    }
    if (summary && (!background || kind === "background.complete")) {
      background = null;
      if (title === null || notices.includes(`title: ${title}`)) return { ...summary, notices };
    }
  }
}

async function runScenario(path) {
  const scenario = JSON.parse(execFileSync(HERMES, ["scenario", "show", path], { encoding: "utf-8" }));
  const gw = new Gateway(path);
  const turns = [];
  try {
    while ((await gw.next()).params?.type !== "gateway.ready");
    const requestId = gw.send("session.create");
    let sessionId = "";
    while (!sessionId) {
      const frame = await gw.next();
      if (frame.id === requestId) sessionId = frame.result.session_id;
    }
    for (const [index, turn] of scenario.turns.entries()) {
      const title = index === 0 ? scenario.title : null;
      turns.push(await runTurn(gw, sessionId, turn, expectedAnswers(scenario, turn), title));
    }
  } finally {
    await gw.close();
  }
  return { scenario: scenario.name, turns };
}

// The same canonical form as Python's json.dumps(sort_keys=True): keys sorted, ", " and ": ".
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(", ")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}: ${canonical(value[k])}`).join(", ")}}`;
  }
  return JSON.stringify(value);
}

const args = process.argv.slice(2);
const paths = args.length ? args : execFileSync(HERMES, ["scenario", "list"], { encoding: "utf-8" }).split("\n").filter(Boolean);
let ok = true;
for (const path of paths) {
  const summary = await runScenario(path);
  ok = ok && summary.turns.every((t) => t.streamed_matches);
  console.log(canonical(summary));
}
process.exit(ok ? 0 : 1);
