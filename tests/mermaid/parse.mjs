// Parse mermaid diagrams with mermaid's own parser: `node parse.mjs DIR` reads a JSON list of
// diagram texts on stdin and prints [{ok, type | error}] for each. DIR holds node_modules with
// mermaid and jsdom (mermaid needs a DOM even to parse; jsdom provides one).
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const require = createRequire(join(process.argv[2], "package.json"));
const { JSDOM } = require("jsdom");
const dom = new JSDOM("<!doctype html><html><body></body></html>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const entry = join(process.argv[2], "node_modules", "mermaid", "dist", "mermaid.core.mjs");
const { default: mermaid } = await import(pathToFileURL(entry).href);
mermaid.initialize({ startOnLoad: false });

let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = [];
for (const text of JSON.parse(input)) {
  try {
    const parsed = await mermaid.parse(text);
    results.push({ ok: true, type: parsed.diagramType });
  } catch (error) {
    results.push({ ok: false, error: String(error?.message ?? error) });
  }
}
process.stdout.write(JSON.stringify(results));
