// Package frames serves Latchkey's own iframe pages, the ones Turnkey's browser SDKs embed
// through @turnkey/iframe-stamper: the export frame (shows an exported mnemonic or private key),
// the import frame (encrypts a typed mnemonic or private key to an import bundle's target) and
// the auth frame of the older SDKs (holds an embedded key, opens credential bundles and stamps
// requests). `latchkey serve` serves them on a listener of their own (--frames-addr), so they
// run in an origin that is not the app's; docs/frames.md describes the protocol and how each
// SDK is pointed at them.
//
// The pages are static HTML, CSS and JavaScript modules embedded in the binary (pages/,
// assets/): no third-party or CDN script, no inline script or style. Each page is rendered per
// request with the signer public keys the deployment trusts now (SignerKeys: the key in use, a
// pending next key, a replaced key in its grace period), because the frames verify export and
// import bundles against those keys and never against a key the parent page hands them; pages
// are therefore sent with Cache-Control: no-store.
//
// Every answer carries a strict Content-Security-Policy. Its frame-ancestors directive lists the
// origins of --frames-ancestors and, when the page's URL names ?organizationId=, the allowed
// origins of that organization's auth proxy; an empty list is 'none' (fail closed), except in
// development mode, where it is *. X-Frame-Options is never sent: the pages exist to be framed.
//
// The package sees no secret: decryption and display happen in the browser. It must never log a
// query beyond the organization id it looks up, and never redirect (the stamper posts its init
// message to the origin of the URL it was given, and a redirect would lose it).
package frames
