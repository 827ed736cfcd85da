// An agent's use of the skillport gateway, driven by the official TypeScript
// SDK client (@modelcontextprotocol/client): list tools, read the
// instructions, search, load a skill, and follow a relative reference its
// body makes with read_skill_file.
//
// Usage: node ts-agent.mjs INTEROP_DIR QUERY SKILL (--url URL | -- command args...)
// INTEROP_DIR is the repository's interop/ directory, whose node_modules holds
// the SDK (ES modules ignore NODE_PATH, so it is imported by path).
// Prints one JSON report on stdout; exits 1 on any failure.

import path from 'node:path';
import process from 'node:process';
import { pathToFileURL } from 'node:url';

const [interop, query, skillName, ...rest] = process.argv.slice(2);
if (!interop || !query || !skillName || rest.length < 2) {
    process.stderr.write('usage: ts-agent.mjs INTEROP_DIR QUERY SKILL (--url URL | -- command args...)\n');
    process.exit(2);
}
const sdk = (file) => pathToFileURL(path.join(interop, 'node_modules/@modelcontextprotocol/client/dist', file)).href;
const { Client, StreamableHTTPClientTransport } = await import(sdk('index.mjs'));
const { StdioClientTransport } = await import(sdk('stdio.mjs'));

const report = { steps: [] };
const text = (res) => (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');

async function main() {
    const transport =
        rest[0] === '--url'
            ? new StreamableHTTPClientTransport(new URL(rest[1]))
            : new StdioClientTransport({ command: rest[1], args: rest.slice(2), env: { ...process.env }, stderr: 'inherit' });
    const client = new Client({ name: 'ts-agent', version: '1.0.0' });
    await client.connect(transport);
    report.protocolVersion = client.getNegotiatedProtocolVersion?.();
    report.instructions = client.getInstructions() ?? '';

    const { tools } = await client.listTools();
    report.tools = tools.map((t) => t.name).sort();
    const readSkill = tools.find((t) => t.name === 'read_skill');
    report.readSkillEnum = readSkill?.inputSchema?.properties?.name?.enum ?? null;

    const search = await client.callTool({ name: 'search_skills', arguments: { query, limit: 5 } });
    report.steps.push({ tool: 'search_skills', isError: !!search.isError, text: text(search) });
    const names = [...text(search).matchAll(/<name>([^<]+)<\/name>/g)].map((m) => m[1]);
    report.searchNames = names;

    const loaded = await client.callTool({ name: 'read_skill', arguments: { name: skillName } });
    const body = text(loaded);
    report.steps.push({ tool: 'read_skill', isError: !!loaded.isError, text: body });

    // Follow the first relative reference the body makes to one of its files.
    const files = [...body.matchAll(/<file>([^<]+)<\/file>/g)].map((m) => m[1]);
    const ref = files.find((f) => body.includes(f + ')') || body.includes(f + '`') || body.includes(' ' + f)) ?? files[0];
    report.followed = ref ?? null;
    if (ref) {
        const file = await client.callTool({ name: 'read_skill_file', arguments: { skill: skillName, path: ref } });
        report.steps.push({ tool: 'read_skill_file', isError: !!file.isError, text: text(file) });
    }
    const dir = await client.callTool({ name: 'list_skill_dir', arguments: { skill: skillName, path: '' } });
    report.steps.push({ tool: 'list_skill_dir', isError: !!dir.isError, text: text(dir) });

    const prompts = await client.listPrompts();
    report.prompts = prompts.prompts.map((p) => p.name).sort();
    await client.close();
}

try {
    await main();
} catch (err) {
    report.error = String(err?.stack ?? err);
}
process.stdout.write(JSON.stringify(report) + '\n');
process.exit(report.error || report.steps.some((s) => s.isError) ? 1 : 0);
