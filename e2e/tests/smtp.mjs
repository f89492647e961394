// A minimal SMTP server for the tests that need a real SMTP exchange (RFC 5321 without
// extensions): it accepts every message and keeps it.
import net from "node:net";

export function startSMTP() {
  const messages = [];
  const waiters = [];
  const server = net.createServer((sock) => {
    let buf = "";
    let inData = false;
    let msg = null;
    const reply = (line) => sock.write(line + "\r\n");
    reply("220 e2e.test ESMTP");
    sock.on("data", (d) => {
      buf += d.toString("latin1");
      for (;;) {
        if (inData) {
          const end = buf.indexOf("\r\n.\r\n");
          if (end < 0) return;
          msg.data = buf.slice(0, end + 2).replace(/^\.\./gm, ".");
          buf = buf.slice(end + 5);
          inData = false;
          messages.push(msg);
          waiters.splice(0).forEach((w) => w());
          reply("250 2.0.0 queued");
          continue;
        }
        const nl = buf.indexOf("\r\n");
        if (nl < 0) return;
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 2);
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === "EHLO" || verb === "HELO") reply("250 e2e.test");
        else if (verb === "MAIL") { msg = { from: line, to: [] }; reply("250 2.1.0 ok"); }
        else if (verb === "RCPT") { msg.to.push(line.replace(/^RCPT TO:\s*/i, "").replace(/[<>]/g, "")); reply("250 2.1.5 ok"); }
        else if (verb === "DATA") { inData = true; reply("354 end with <CRLF>.<CRLF>"); }
        else if (verb === "QUIT") { reply("221 bye"); sock.end(); }
        else if (verb === "RSET" || verb === "NOOP") reply("250 ok");
        else reply("502 5.5.2 not implemented");
      }
    });
    sock.on("error", () => {});
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({
    port: server.address().port,
    messages,
    // The next message to `to` after `after` messages.
    async next(to, after) {
      for (let i = 0; i < 100; i++) {
        const m = messages.slice(after).find((m) => m.to.includes(to));
        if (m) return m;
        await new Promise((r) => { waiters.push(r); setTimeout(r, 100); });
      }
      throw new Error(`no e-mail to ${to}`);
    },
    close: () => new Promise((r) => server.close(r)),
  })));
}
