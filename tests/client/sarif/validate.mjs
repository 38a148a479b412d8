// Validates SARIF logs against the official SARIF 2.1.0 JSON schema with
// ajv (draft-04, as the schema is written): node validate.mjs FILE...
// Exit 0 when every file is valid; 1 with ajv's errors otherwise.
// sarif-schema-2.1.0.json beside this file is oasis-tcs/sarif-spec
// sarif-2.1/schema/sarif-schema-2.1.0.json at a560296ca8c921f3bdb8d4a8db57ab83dae968a7
// (the 2.1.0 errata01 schema, "id" https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, "../../../web/package.json"));
const Ajv = require("ajv-draft-04");

const ajv = new Ajv({ allErrors: true, strict: false });
// The formats the schema names, as RFC 3986 / RFC 3339 define them.
ajv.addFormat("uri", /^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$/);
ajv.addFormat("uri-reference", /^[^\s]*$/);
ajv.addFormat("date-time", /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i);
const schema = JSON.parse(readFileSync(join(here, "sarif-schema-2.1.0.json"), "utf8"));
const validate = ajv.compile(schema);

let failed = false;
for (const file of process.argv.slice(2)) {
  const log = JSON.parse(readFileSync(file, "utf8"));
  if (!validate(log)) {
    failed = true;
    console.error(`${file}: not valid SARIF 2.1.0`);
    for (const error of validate.errors) console.error(`  ${error.instancePath} ${error.message}`);
  } else {
    console.log(`${file}: valid SARIF 2.1.0 (${log.runs[0].results.length} results)`);
  }
}
process.exit(failed ? 1 : 0);
