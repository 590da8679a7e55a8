// Scenarios that pi's own RpcClient (from @earendil-works/pi-coding-agent 1.6.0) runs against
// `hermes pi`. Usage: node rpc_client.mjs SCENARIO. The environment names the pieces:
// PI_MODULES (node_modules with pi installed), HERMES_PI_SHIM (the cliPath the client starts),
// WORKDIR (the workspace). Each scenario prints one JSON object with what the client saw; the
// Python test asserts on it. Any exception ends the process with code 1 and the stack on stderr.
import { once } from "node:events";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.PI_MODULES;
const rpcClientPath = join(modules, "@earendil-works/pi-coding-agent/dist/modes/rpc/rpc-client.js");
const { RpcClient } = await import(pathToFileURL(rpcClientPath).href);

function client(args = []) {
	return new RpcClient({ cliPath: process.env.HERMES_PI_SHIM, cwd: process.env.WORKDIR, args });
}

/** The text each assistant message streamed, rebuilt from the text_delta events. */
function streamed(events) {
	const texts = [];
	let current = null;
	for (const event of events) {
		if (event.type === "message_start" && event.message.role === "assistant") {
			current = "";
		} else if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta") {
			current += event.assistantMessageEvent.delta;
		} else if (event.type === "message_end" && event.message.role === "assistant") {
			texts.push(current);
			current = null;
		}
	}
	return texts;
}

function finalTexts(events) {
	return events
		.filter((e) => e.type === "message_end" && e.message.role === "assistant")
		.map((e) => e.message.content.filter((b) => b.type === "text").map((b) => b.text).join(""));
}

/** Collect every event until one matches, then resolve with all of them. */
function until(c, predicate, timeout = 60000) {
	return new Promise((resolve, reject) => {
		const seen = [];
		const timer = setTimeout(() => {
			stop();
			reject(new Error(`timed out; saw ${seen.map((e) => e.type).join(",")}`));
		}, timeout);
		const stop = c.onEvent((event) => {
			seen.push(event);
			if (predicate(event)) {
				clearTimeout(timer);
				stop();
				resolve(seen);
			}
		});
	});
}

/** Close stdin (pi's orderly shutdown) and wait for the process to exit. */
async function quit(c) {
	const child = c.process;
	const exited = once(child, "exit");
	child.stdin.end();
	const [code] = await exited;
	await c.stop();
	return code;
}

function reply(c, record) {
	c.process.stdin.write(`${JSON.stringify(record)}\n`);
}

const scenarios = {
	async prompt() {
		const c = client();
		await c.start();
		const before = await c.getState();
		const events = await c.promptAndWait("hello world");
		const result = {
			before,
			types: events.map((e) => e.type),
			streamed: streamed(events),
			final: finalTexts(events),
			lastText: await c.getLastAssistantText(),
			messages: await c.getMessages(),
			after: await c.getState(),
			stats: await c.getSessionStats(),
		};
		result.exitCode = await quit(c);
		return result;
	},

	async streaming() {
		const c = client();
		await c.start();
		const events = await c.promptAndWait("count [[tokens 500]]");
		const deltas = events.filter(
			(e) => e.type === "message_update" && e.assistantMessageEvent.type === "text_delta",
		);
		const result = { deltas: deltas.length, streamed: streamed(events), final: finalTexts(events) };
		await quit(c);
		return result;
	},

	async steer() {
		const c = client();
		await c.start();
		const running = until(c, (e) => e.type === "tool_execution_start");
		const settled = c.collectEvents(90000);
		const disposition = await c.prompt('work [[tool terminal {"command": "sleep 2; echo worked"}]]');
		await running;
		const steered = await c.steer("keep it short");
		const events = await settled;
		const result = {
			disposition,
			steered,
			queues: events.filter((e) => e.type === "queue_update"),
			final: finalTexts(events),
			settled: events.filter((e) => e.type === "agent_settled"),
		};
		await quit(c);
		return result;
	},

	async follow_up() {
		const c = client();
		await c.start();
		const streaming = until(c, (e) => e.type === "message_update");
		const settled = c.collectEvents(90000);
		await c.prompt("first [[tokens 40]] [[delay 50]]");
		await streaming;
		const queued = await c.followUp("second");
		const events = await settled;
		const result = {
			queued,
			types: events.map((e) => e.type),
			final: finalTexts(events),
			queues: events.filter((e) => e.type === "queue_update"),
			messages: await c.getMessages(),
		};
		await quit(c);
		return result;
	},

	async abort() {
		const c = client();
		await c.start();
		const streaming = until(c, (e) => e.type === "message_update" && e.assistantMessageEvent.type === "text_delta");
		const settled = c.collectEvents(90000);
		await c.prompt("long [[tokens 5000]] [[delay 20]]");
		await streaming;
		await c.abort();
		const events = await settled;
		const state = await c.getState();
		const again = await c.promptAndWait("again");
		const result = {
			settled: events.filter((e) => e.type === "agent_settled"),
			stops: events.filter((e) => e.type === "message_end").map((e) => e.message.stopReason ?? null),
			state,
			again: finalTexts(again),
		};
		await quit(c);
		return result;
	},

	async approval() {
		const c = client();
		await c.start();
		const requests = [];
		c.onEvent((event) => {
			if (event.type === "extension_ui_request" && event.method === "select") {
				requests.push(event);
				const choice = requests.length === 1 ? "Allow once" : "Deny";
				reply(c, { type: "extension_ui_response", id: event.id, value: choice });
			}
		});
		const allowed = await c.promptAndWait('go [[tool terminal {"command": "hermes-guard-test; echo approved-run"}]]');
		const denied = await c.promptAndWait('again [[tool terminal {"command": "hermes-guard-test; echo second-run"}]]');
		const ends = (events) => events.filter((e) => e.type === "tool_execution_end");
		const result = { requests, allowed: ends(allowed), denied: ends(denied), final: finalTexts(denied) };
		await quit(c);
		return result;
	},

	async models() {
		const c = client();
		await c.start();
		const available = await c.getAvailableModels();
		const chosen = await c.setModel("mock", "alt");
		const events = await c.promptAndWait("hi");
		const state = await c.getState();
		const levels = await c.getAvailableThinkingLevels();
		await c.setThinkingLevel("high");
		const thinking = (await c.getState()).thinkingLevel;
		const cycled = await c.cycleModel();
		let failure = null;
		try {
			await c.setModel("mock", "no-such-model");
		} catch (error) {
			failure = error.message;
		}
		const result = { available, chosen, final: finalTexts(events), state, levels, thinking, cycled, failure };
		await quit(c);
		return result;
	},

	async compact() {
		const c = client();
		await c.start();
		await c.promptAndWait("first question about apples");
		await c.promptAndWait("second question about pears");
		const events = [];
		const stop = c.onEvent((e) => events.push(e));
		const compacted = await c.compact("keep the fruit");
		stop();
		const result = {
			compacted,
			events: events.filter((e) => e.type.startsWith("compaction")),
			messages: await c.getMessages(),
			entries: await c.getEntries(),
		};
		await quit(c);
		return result;
	},

	async restart() {
		const first = client();
		await first.start();
		await first.promptAndWait("remember the word zebra");
		const state = await first.getState();
		await quit(first);
		const second = client(["--session", state.sessionFile]);
		await second.start();
		const result = {
			first: state,
			second: await second.getState(),
			messages: await second.getMessages(),
			again: finalTexts(await second.promptAndWait("and now?")),
		};
		await quit(second);
		return result;
	},
};

const name = process.argv[2];
const scenario = scenarios[name];
if (!scenario) {
	process.stderr.write(`unknown scenario ${name}\n`);
	process.exit(2);
}
const result = await scenario();
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
