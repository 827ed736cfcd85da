// A legacy skills client written with the official TypeScript SDK
// (@modelcontextprotocol/client): it speaks the pre-extension designs only,
// through the SDK's generic client.request with a permissive result schema.
// SEP-2076: skills/list, skills/get {name, arguments}; seed 001: skills/read,
// skills/read_reference, skills/execute; seed 002: resources/read
// skill://index.json.
//
// Usage: node ts-legacy-client.mjs INTEROP_DIR (--url URL | -- command args...)
// INTEROP_DIR is the repository's interop/ directory, whose node_modules holds
// the SDK (ES modules ignore NODE_PATH, so it is imported by path).
// Prints one JSON report on stdout: {"steps": {name: {result} | {error: {code, message, data}}}}.

import path from 'node:path';
import process from 'node:process';
import { pathToFileURL } from 'node:url';

const [interop, ...rest] = process.argv.slice(2);
if (!interop || rest.length < 2) {
    process.stderr.write('usage: ts-legacy-client.mjs INTEROP_DIR (--url URL | -- command args...)\n');
    process.exit(2);
}
const mod = (p) => pathToFileURL(path.join(interop, 'node_modules', p)).href;
const { Client, StreamableHTTPClientTransport } = await import(mod('@modelcontextprotocol/client/dist/index.mjs'));
const { StdioClientTransport } = await import(mod('@modelcontextprotocol/client/dist/stdio.mjs'));
const { z } = await import(mod('zod/index.js'));

let transport;
if (rest[0] === '--url') {
    transport = new StreamableHTTPClientTransport(new URL(rest[1]));
} else if (rest[0] === '--') {
    transport = new StdioClientTransport({ command: rest[1], args: rest.slice(2), stderr: 'ignore' });
} else {
    process.stderr.write(`unknown target ${rest[0]}\n`);
    process.exit(2);
}

// A legacy client declares no extension.
const client = new Client({ name: 'ts-legacy-client', version: '0' }, { capabilities: {} });
const any = z.looseObject({});
const report = { steps: {} };

async function step(name, method, params) {
    try {
        report.steps[name] = { result: await client.request({ method, params }, any) };
    } catch (e) {
        report.steps[name] = { error: { code: e.code, message: String(e.message), data: e.data } };
    }
}

try {
    await client.connect(transport);
    await step('list', 'skills/list', {});
    await step('get', 'skills/get', { name: 'pdf-form-filling', arguments: { document_type: 'tax' } });
    await step('getUnknown', 'skills/get', { name: 'nonexistent-skill' });
    await step('getBoth', 'skills/get', { name: 'pdf-form-filling', uri: 'skill://pdf-form-filling/SKILL.md' });
    await step('read', 'skills/read', { name: 'create-presentation' });
    await step('readUnknown', 'skills/read', { name: 'nonexistent-skill' });
    await step('reference', 'skills/read_reference', { name: 'create-presentation', reference: 'templates' });
    await step('referenceTraversal', 'skills/read_reference', { name: 'create-presentation', reference: '../pdf-form-filling/SKILL.md' });
    await step('execute', 'skills/execute', {
        name: 'create-presentation',
        script: 'create_pptx',
        arguments: { title: 'Q4 Sales Review', slides: [{ type: 'title', title: 'Q4 Sales Review' }] }
    });
    try {
        report.steps.index = { result: await client.readResource({ uri: 'skill://index.json' }) };
    } catch (e) {
        report.steps.index = { error: { code: e.code, message: String(e.message) } };
    }
    await client.close();
} catch (e) {
    report.fatal = String(e && e.stack ? e.stack : e);
}
process.stdout.write(JSON.stringify(report) + '\n');
process.exit(report.fatal ? 1 : 0);
