// Usage: node validate.mjs FILE — prints the parser's diagnostics as JSON; exit 1 on any error.
import { readFileSync } from "node:fs";
import { Parser } from "@asyncapi/parser";

const file = process.argv[2];
const parser = new Parser();
const { document, diagnostics } = await parser.parse(readFileSync(file, "utf8"));
// Spectral severities: 0 error, 1 warning, 2 info, 3 hint.
const errors = diagnostics.filter((d) => d.severity === 0);
console.log(JSON.stringify({
  valid: document !== undefined && errors.length === 0,
  version: document?.version(),
  channels: document ? document.channels().all().map((c) => c.id()) : [],
  errors: errors.map((d) => ({ path: d.path.join("."), message: d.message })),
  warnings: diagnostics.filter((d) => d.severity === 1).map((d) => ({ path: d.path.join("."), message: d.message })),
}, null, 2));
process.exit(errors.length === 0 && document !== undefined ? 0 : 1);
