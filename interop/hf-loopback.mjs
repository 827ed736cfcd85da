// Preload for Hugging Face's hf-mcp-server in skillport's interop tests:
//
//   node --import ./hf-loopback.mjs node_modules/@llmindset/hf-mcp-server/dist/server/streamableHttp.js --port 0
//
// The server listens on every interface and has no option to choose one, so
// this binds its listen(port) calls to 127.0.0.1 (tests listen on loopback
// only) and prints "listening http://127.0.0.1:PORT/mcp" on stdout once the
// MCP endpoint's server is up, so that a test started with --port 0 learns
// the port the system chose.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] !== 'number' && !(typeof args[0] === 'string' && /^\d+$/.test(args[0]))) {
    return listen.apply(this, args);
  }
  const callback = args.find((a) => typeof a === 'function');
  this.once('listening', () => {
    const { port } = this.address();
    process.stdout.write(`listening http://127.0.0.1:${port}/mcp\n`);
  });
  return listen.call(this, { port: Number(args[0]), host: '127.0.0.1' }, callback);
};
