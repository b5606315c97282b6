// One check of one Node client against the gateway: `node clients.mjs <client> <check>` with GW_URL and
// GW_KEY in the environment. Prints one JSON line per step (`{"step": ..., ...}`); for the checks that
// repeat a call ("repeat", "cached_tokens") it prints {"step": "first"} and waits for a line on stdin
// before the second call, so the test can let the gateway finish its after-request work in between.
import { createInterface } from "node:readline";
import { generateText, streamText, tool, Output, stepCountIs } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import OpenAI from "openai";
import { zodResponseFormat } from "openai/helpers/zod";
import Anthropic from "@anthropic-ai/sdk";
import { zodOutputFormat } from "@anthropic-ai/sdk/helpers/zod";
import { z } from "zod";

const [client, check] = process.argv.slice(2);
const URL_ = process.env.GW_URL;
const KEY = process.env.GW_KEY;
const LONG_SYSTEM = process.env.LONG_SYSTEM;
const WEATHER_QUESTION = "Use the get_weather tool to find the weather in Paris.";
const question = `Explain prompt caching briefly (${client} ${check}).`;

const Address = z.object({ city: z.string(), postcode: z.string().nullable() });
const Trip = z.object({
  destination: z.string(),
  days: z.number().int(),
  travel: z.enum(["train", "plane"]),
  stops: z.array(Address),
  grid: z.array(z.array(z.number().int())),
  hotel: Address.nullable(),
});
const weatherSchema = z.object({ city: z.string().describe("City name") });
const getWeather = ({ city }) => `18C and sunny in ${city}`;

const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const waitForGo = async () => { emit({ step: "first" }); await lines.next(); };

// ---- the Vercel AI SDK (ai + @ai-sdk/*) ---------------------------------------------------------------
function vercelModel() {
  if (client === "vercel-openai") return createOpenAI({ baseURL: `${URL_}/v1`, apiKey: KEY })("gpt-4o-mini");
  if (client === "vercel-anthropic") {
    return createAnthropic({ baseURL: `${URL_}/v1`, apiKey: KEY })("claude-sonnet-4-5");
  }
  return createGoogleGenerativeAI({ baseURL: `${URL_}/v1beta`, apiKey: KEY })("gemini-2.5-flash");
}

async function vercel() {
  const model = vercelModel();
  const weather = tool({ description: "Get the weather in a city.", inputSchema: weatherSchema, execute: getWeather });
  const base = { model, maxRetries: 0, maxOutputTokens: 2000 };
  if (check === "plain") {
    const r = await generateText({ ...base, prompt: question });
    return { text: r.text, finish: r.finishReason, output_tokens: r.usage.outputTokens };
  }
  if (check === "stream") {
    const r = streamText({ ...base, prompt: question });
    const deltas = [];
    for await (const d of r.textStream) deltas.push(d);
    return { deltas: deltas.length, text: deltas.join(""), final: await r.text, finish: await r.finishReason,
             output_tokens: (await r.usage).outputTokens };
  }
  if (check === "tools") {
    const r = await generateText({ ...base, prompt: WEATHER_QUESTION, tools: { get_weather: weather },
                                   stopWhen: stepCountIs(3) });
    return { text: r.text, steps: r.steps.length, tool_results: r.steps.flatMap((s) => s.toolResults.map((t) => t.output)) };
  }
  if (check === "structured" || check === "structured_tools") {
    const tools = check === "structured_tools" ? { tools: { get_weather: weather }, stopWhen: stepCountIs(4) } : {};
    const prompt = check === "structured_tools" ? `${WEATHER_QUESTION} Then plan a trip there.` : "Plan a trip to Lyon.";
    const r = await generateText({ ...base, ...tools, prompt, output: Output.object({ schema: Trip }) });
    return { output: Trip.parse(r.output), steps: r.steps.length,
             tool_results: r.steps.flatMap((s) => s.toolResults.map((t) => t.output)) };
  }
  if (check === "repeat") {
    const a = await generateText({ ...base, prompt: question });
    await waitForGo();
    const b = await generateText({ ...base, prompt: question });
    return { first: a.text, second: b.text };
  }
  if (check === "cached_tokens") {
    const out = [];
    for (const [i, q] of ["Can I return a lamp?", "Can I return a chair?"].entries()) {
      if (i) await waitForGo();
      const r = await generateText({ ...base, system: LONG_SYSTEM, prompt: q });
      out.push(r.usage.inputTokenDetails?.cacheReadTokens ?? 0);
    }
    return { cached: out };
  }
  throw new Error(`unknown check ${check}`);
}

// ---- the official SDKs ----------------------------------------------------------------------------------
async function nodeOpenAI() {
  const oa = new OpenAI({ baseURL: `${URL_}/v1`, apiKey: KEY, maxRetries: 0 });
  const model = "gpt-4o-mini";
  const msgs = [{ role: "user", content: question }];
  const tools = [{ type: "function", function: { name: "get_weather", strict: true, parameters: z.toJSONSchema(weatherSchema) } }];
  const toolRound = async (extra) => {
    const messages = [{ role: "user", content: WEATHER_QUESTION }];
    const first = await oa.chat.completions.create({ model, messages, tools, ...extra });
    const call = first.choices[0].message.tool_calls[0];
    messages.push(first.choices[0].message,
                  { role: "tool", tool_call_id: call.id, content: getWeather(JSON.parse(call.function.arguments)) });
    return [first, messages];
  };
  if (check === "plain") {
    const r = await oa.chat.completions.create({ model, messages: msgs });
    return { text: r.choices[0].message.content, finish: r.choices[0].finish_reason, output_tokens: r.usage.completion_tokens };
  }
  if (check === "stream") {
    const s = await oa.chat.completions.create({ model, messages: msgs, stream: true, stream_options: { include_usage: true } });
    const deltas = [];
    let usage = null;
    let finish = null;
    for await (const c of s) {
      if (c.choices.length && c.choices[0].delta.content) deltas.push(c.choices[0].delta.content);
      if (c.choices.length && c.choices[0].finish_reason) finish = c.choices[0].finish_reason;
      if (c.usage) usage = c.usage;
    }
    return { deltas: deltas.length, text: deltas.join(""), final: deltas.join(""), finish, output_tokens: usage.completion_tokens };
  }
  if (check === "tools") {
    const [first, messages] = await toolRound({});
    const r = await oa.chat.completions.create({ model, messages, tools });
    return { first_finish: first.choices[0].finish_reason, text: r.choices[0].message.content,
             tool_results: [messages.at(-1).content] };
  }
  if (check === "structured") {
    const r = await oa.chat.completions.parse({ model, messages: [{ role: "user", content: "Plan a trip to Lyon." }],
                                                response_format: zodResponseFormat(Trip, "trip") });
    return { output: Trip.parse(r.choices[0].message.parsed), finish: r.choices[0].finish_reason };
  }
  if (check === "structured_tools") {
    const fmt = { response_format: zodResponseFormat(Trip, "trip") };
    const [, messages] = await toolRound(fmt);
    const r = await oa.chat.completions.parse({ model, messages, tools, ...fmt });
    return { output: Trip.parse(r.choices[0].message.parsed), tool_results: [messages.at(-1).content] };
  }
  if (check === "repeat") {
    const a = await oa.chat.completions.create({ model, messages: msgs });
    await waitForGo();
    const b = await oa.chat.completions.create({ model, messages: msgs }).withResponse();
    return { first: a.choices[0].message.content, second: b.data.choices[0].message.content,
             header: b.response.headers.get("x-gateway-cache") };
  }
  if (check === "cached_tokens") {
    const out = [];
    for (const [i, q] of ["Can I return a lamp?", "Can I return a chair?"].entries()) {
      if (i) await waitForGo();
      const r = await oa.chat.completions.create({ model, messages: [{ role: "system", content: LONG_SYSTEM }, { role: "user", content: q }] });
      out.push(r.usage.prompt_tokens_details?.cached_tokens ?? 0);
    }
    return { cached: out };
  }
  throw new Error(`unknown check ${check}`);
}

async function nodeAnthropic() {
  const an = new Anthropic({ baseURL: URL_, apiKey: KEY, maxRetries: 0 });
  const model = "claude-sonnet-4-5";
  const base = { model, max_tokens: 2000 };
  const msgs = [{ role: "user", content: question }];
  const tools = [{ name: "get_weather", description: "Get the weather in a city.", input_schema: z.toJSONSchema(weatherSchema) }];
  const text = (m) => m.content.filter((b) => b.type === "text").map((b) => b.text).join("");
  const toolRound = async (extra) => {
    const messages = [{ role: "user", content: WEATHER_QUESTION }];
    const first = await an.messages.create({ ...base, messages, tools, ...extra });
    const call = first.content.find((b) => b.type === "tool_use");
    messages.push({ role: "assistant", content: first.content },
                  { role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: getWeather(call.input) }] });
    return [first, messages];
  };
  if (check === "plain") {
    const r = await an.messages.create({ ...base, messages: msgs });
    return { text: text(r), finish: r.stop_reason, output_tokens: r.usage.output_tokens };
  }
  if (check === "stream") {
    const s = an.messages.stream({ ...base, messages: msgs });
    const deltas = [];
    s.on("text", (t) => deltas.push(t));
    const final = await s.finalMessage();
    return { deltas: deltas.length, text: deltas.join(""), final: text(final), finish: final.stop_reason,
             output_tokens: final.usage.output_tokens };
  }
  if (check === "tools") {
    const [first, messages] = await toolRound({});
    const r = await an.messages.create({ ...base, messages, tools });
    return { first_finish: first.stop_reason, text: text(r), tool_results: [messages.at(-1).content[0].content] };
  }
  if (check === "structured") {
    const r = await an.messages.parse({ ...base, messages: [{ role: "user", content: "Plan a trip to Lyon." }],
                                        output_config: { format: zodOutputFormat(Trip) } });
    return { output: Trip.parse(r.parsed_output), finish: r.stop_reason };
  }
  if (check === "structured_tools") {
    const fmt = { output_config: { format: zodOutputFormat(Trip) } };
    const [, messages] = await toolRound(fmt);
    const r = await an.messages.parse({ ...base, messages, tools, ...fmt });
    return { output: Trip.parse(r.parsed_output), tool_results: [messages.at(-1).content[0].content] };
  }
  if (check === "repeat") {
    const a = await an.messages.create({ ...base, messages: msgs });
    await waitForGo();
    const b = await an.messages.create({ ...base, messages: msgs }).withResponse();
    return { first: text(a), second: text(b.data), header: b.response.headers.get("x-gateway-cache") };
  }
  if (check === "cached_tokens") {
    const out = [];
    for (const [i, q] of ["Can I return a lamp?", "Can I return a chair?"].entries()) {
      if (i) await waitForGo();
      const r = await an.messages.create({ ...base, system: LONG_SYSTEM, messages: [{ role: "user", content: q }] });
      out.push(r.usage.cache_read_input_tokens ?? 0);
    }
    return { cached: out };
  }
  throw new Error(`unknown check ${check}`);
}

const run = client.startsWith("vercel-") ? vercel : client === "openai" ? nodeOpenAI : nodeAnthropic;
try {
  emit({ step: "result", ...(await run()) });
  process.exit(0);
} catch (err) {
  emit({ step: "error", error: String(err && err.stack ? err.stack : err) });
  process.exit(1);
}
