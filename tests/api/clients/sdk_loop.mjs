// The canonical openai-node streaming loop, run by test_api_stream_clients.py from a copy placed
// next to the SDK's node_modules.
// argv: base URL (…/v1), API key, prompt. Prints one JSON line: text, SDK version, error.
import OpenAI, { APIError } from "openai";
import { VERSION } from "openai/version";

const [baseURL, apiKey, prompt] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
let text = "";
let error = null;
try {
  const stream = await client.chat.completions.create({
    model: "hermes-agent",
    stream: true,
    messages: [{ role: "user", content: prompt }],
  });
  for await (const chunk of stream) {
    text += chunk.choices[0].delta.content ?? "";
  }
} catch (exc) {
  if (!(exc instanceof APIError)) throw exc;
  error = { type: exc.constructor.name, message: exc.message };
}
console.log(JSON.stringify({ version: VERSION, text, error }));
