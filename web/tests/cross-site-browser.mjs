// A web page of another origin, in a real browser (Debian's chromium driven by
// playwright-core), tries to make its visitor's browser run a program on a
// python-sb serve it can reach: a "simple" cross-site POST (text/plain, no
// preflight), which a browser sends without asking. Run by
// tests/integration/test_serve_http.py with the page's URL; prints one JSON
// object: what the page's fetch reported.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [pageUrl] = process.argv.slice(2);
const profileDir = mkdtempSync(join(tmpdir(), "python-sb-cross-site-"));
const context = await chromium.launchPersistentContext(profileDir, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"],
});
try {
  const page = context.pages()[0] || (await context.newPage());
  await page.goto(pageUrl, { waitUntil: "load" });
  await page.waitForFunction(() => document.title !== "", null, { timeout: 30000 });
  console.log(JSON.stringify({ title: await page.title() }));
} finally {
  await context.close();
  rmSync(profileDir, { recursive: true, force: true });
}
