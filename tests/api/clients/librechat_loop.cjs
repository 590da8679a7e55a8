// LibreChat's own OpenAI chat model (@librechat/agents), streamed, run by test_api_stream_clients.py
// from a copy placed next to the package's node_modules.
// argv: base URL (…/v1), API key, prompt. Prints one JSON line: text, package version, error.
const { getChatModelClass } = require("@librechat/agents");
const path = require("node:path");
const fs = require("node:fs");

const manifest = path.join(__dirname, "node_modules", "@librechat", "agents", "package.json");
const { version } = JSON.parse(fs.readFileSync(manifest, "utf8"));

async function main() {
  const [baseURL, apiKey, prompt] = process.argv.slice(2);
  const ChatOpenAI = getChatModelClass("openAI");
  const llm = new ChatOpenAI({
    model: "hermes-agent",
    apiKey,
    configuration: { baseURL },
    streaming: true,
    maxRetries: 0,
  });
  let text = "";
  let error = null;
  try {
    for await (const chunk of await llm.stream([["human", prompt]])) {
      text += typeof chunk.content === "string" ? chunk.content : "";
    }
  } catch (exc) {
    error = { type: exc.constructor.name, message: String(exc.message) };
  }
  console.log(JSON.stringify({ version, text, error }));
}

main();
