// Encodes texts with Hugging Face's JavaScript tokenizers (npm package
// @huggingface/tokenizers), an implementation independent of kai's.
// Used only by pin.py, which records the ids once; the tests never run it.
//   node hf_encode.cjs NPM_DIR tokenizer.json tokenizer_config.json < texts.json > ids.json
// NPM_DIR is the directory where `npm install @huggingface/tokenizers` ran.
// texts.json is a JSON list of strings; ids.json the list of id lists.
"use strict";
const fs = require("fs");
const path = require("path");
const [npmDir, tokenizerPath, configPath] = process.argv.slice(2);
const { Tokenizer } = require(require.resolve("@huggingface/tokenizers", { paths: [path.resolve(npmDir)] }));
const tokenizer = new Tokenizer(JSON.parse(fs.readFileSync(tokenizerPath, "utf8")),
                                JSON.parse(fs.readFileSync(configPath, "utf8")));
const texts = JSON.parse(fs.readFileSync(0, "utf8"));
// No special tokens added around the text: kai's encoders add none for this
// kind of tokenizer either (special tokens written in the text still count).
const ids = texts.map((t) => Array.from(tokenizer.encode(t, { add_special_tokens: false }).ids));
process.stdout.write(JSON.stringify(ids) + "\n");
