// Records every HTTP/2 session this Node process opens (the AWS SDK's handlers call
// http2.connect through the module object), so a test can show which protocol a client
// spoke and inspect or close its sessions.
const http2 = require('node:http2');

const sessions = [];
const realConnect = http2.connect;
http2.connect = (...a) => {
  const s = realConnect.apply(http2, a);
  sessions.push(s);
  return s;
};

module.exports = { sessions };
