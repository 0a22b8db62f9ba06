// The playground in a real browser (Debian's chromium, driven by
// playwright-core): type a program, run it, check the output and the chart;
// a hostile program shows its denial. Run by
// tests/integration/test_serve_playground.py with the server's URL; prints one
// JSON object with what it saw, exits non-zero on a failed check.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [url, screenshotDir] = process.argv.slice(2);
const seen = { checks: [], external: [] };
let failed = false;

function check(ok, what, got) {
  seen.checks.push({ ok: Boolean(ok), what, got });
  if (!ok) failed = true;
}

async function typeProgram(page, lines) {
  await page.click(".cm-content");
  await page.keyboard.press("Control+A");
  await page.keyboard.press("Backspace");
  for (const [i, line] of lines.entries()) {
    // Lines that open no block: the editor indents none of them.
    if (i > 0) await page.keyboard.press("Enter");
    await page.keyboard.type(line);
  }
}

async function runAndWait(page) {
  await page.click("#run");
  await page.waitForFunction(() => {
    const s = document.getElementById("status").textContent;
    return s === "done" || s.startsWith("error");
  }, null, { timeout: 60000 });
  return page.textContent("#status");
}

const profileDir = mkdtempSync(join(tmpdir(), "python-sb-playground-"));
const context = await chromium.launchPersistentContext(profileDir, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"],
});
try {
  const page = context.pages()[0] || (await context.newPage());
  const origin = new URL(url).origin;
  page.on("request", (r) => {
    if (!r.url().startsWith(origin) && !r.url().startsWith("data:")) seen.external.push(r.url());
  });
  await page.goto(url, { waitUntil: "load" });
  await page.waitForSelector(".cm-content");
  check(await page.title() === "python-sb playground", "the page's title", await page.title());

  // An ordinary program, typed.
  await typeProgram(page, ["total = 0", "for i in range(50): total += i * i",
                           "print(\"total\", total)"]);
  let status = await runAndWait(page);
  check(status === "done", "the run ends", status);
  const stdout = await page.textContent("#stdout");
  check(stdout === "total 40425\n", "its stdout", stdout);
  check((await page.textContent("#summary-exit")) === "0", "its exit status",
        await page.textContent("#summary-exit"));
  const bars = await page.$$eval("#functions-chart g.function", (gs) =>
    gs.map((g) => ({ name: g.dataset.name, width: Number(g.querySelector("rect").getAttribute("width")) })));
  check(bars.length > 0 && bars.every((b) => b.width > 0), "the chart has bars", bars.length);
  check(bars.some((b) => b.name === "<module>"), "the program's module is in the chart",
        bars.map((b) => b.name));
  const lines = await page.$$eval("#lines tr.line", (rows) =>
    rows.map((r) => [Number(r.dataset.line), Number(r.dataset.count)]));
  check(lines.length === 3, "one row per source line", lines);
  check(lines[0][1] === 1 && lines[1][1] >= 50 && lines[2][1] === 1,
        "the per-line counts", lines);
  check((await page.$$("#denials tr.denial")).length === 0, "no denial", null);
  if (screenshotDir) await page.screenshot({ path: join(screenshotDir, "playground-run.png"), fullPage: true });

  // A hostile program: its denial, with the rule that would allow it.
  await typeProgram(page, ["print(open(\"/etc/passwd\").read())"]);
  status = await runAndWait(page);
  check(status === "done", "the hostile run ends", status);
  const denials = await page.$$eval("#denials tr.denial", (rows) =>
    rows.map((r) => [...r.cells].map((c) => c.textContent)));
  check(denials.length === 1 && denials[0][0] === "file" && denials[0][1] === "/etc/passwd" &&
        denials[0][2] === "expose-ro=/etc", "the denial and its rule", denials);
  check(!(await page.isHidden("#denials")), "the denials table is shown", null);
  check((await page.textContent("#stderr")).includes("RuleFileNotFoundError"),
        "the refusal in stderr", await page.textContent("#stderr"));
  check((await page.textContent("#stdout")) === "", "nothing was read", await page.textContent("#stdout"));
  if (screenshotDir) await page.screenshot({ path: join(screenshotDir, "playground-denial.png"), fullPage: true });
  check(seen.external.length === 0, "no request left the server", seen.external);
} catch (e) {
  failed = true;
  seen.error = String(e && e.stack ? e.stack : e);
} finally {
  await context.close();
  rmSync(profileDir, { recursive: true, force: true });
}
console.log(JSON.stringify(seen));
process.exit(failed ? 1 : 0);
