// Every script the pages load parses: a redeclared name or a stray bracket
// in one of them would leave its tab dead in the browser, silently.
// Run by Node's own test runner from scripts/test: `node --test Tests/pages`.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');

const root = path.join(__dirname, '../../Sources');
const scripts = fs.readdirSync(root).flatMap((module) => {
  const assets = path.join(root, module, 'Assets');
  return fs.existsSync(assets) ? fs.readdirSync(assets).filter((f) => f.endsWith('.js')).map((f) => path.join(assets, f)) : [];
});

test('the pages have scripts to check', () => assert.ok(scripts.length >= 6, scripts.join(', ')));

for (const file of scripts) {
  test(`${path.relative(root, file)} parses`, () => {
    assert.doesNotThrow(() => new vm.Script(fs.readFileSync(file, 'utf8'), { filename: file }));
  });
}
