// Drives the operator's dashboard in Debian's chromium, headless, for tests/it/dashboard.rs:
// one JSON command per line on stdin, one JSON answer per line on stdout (the test makes
// its trades and orders over HTTP between commands). Every console error, page error and
// failed request of the page is kept and reported by `errors`.
//
//   {"cmd": "open", "url": ".../", "width": 1280, "height": 800}
//   {"cmd": "rows"}                         the markets table, as the page shows it
//   {"cmd": "select", "market": "0x.."}      shows that market's book (clicks its row)
//   {"cmd": "trade", "price": "0.55", "size": "10", "timeoutMs": 10000}
//   {"cmd": "charts"}                       waits for the time series' first points
//   {"cmd": "depth"}                        the depth chart's description
//   {"cmd": "mode", "mode": "cancel-only"}  clicks its button, confirms, waits for the page
//   {"cmd": "keyboard_mode", "mode": "normal"}  the same with the keyboard only
//   {"cmd": "limit", "max": 100, "window": 10}  submits the rate-limit form
//   {"cmd": "viewport", "width": 390, "height": 844}
//   {"cmd": "shot", "path": ".../x.png", "full": true}
//   {"cmd": "overflow"}                     whether the page is wider than the viewport
//   {"cmd": "errors"}
//   {"cmd": "close"}
import { createRequire } from "node:module";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const { chromium } = require(path.join(here, "../../tools/node_modules/playwright-core"));

const browser = await chromium.launch({
  executablePath: process.env.PREDEX_CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
let page = null;
const errors = [];

async function run(c) {
  switch (c.cmd) {
    case "open": {
      const context = await browser.newContext({ viewport: { width: c.width, height: c.height } });
      page = await context.newPage();
      page.on("console", (m) => { if (m.type() === "error") errors.push(`console: ${m.text()} at ${m.location().url}`); });
      page.on("pageerror", (e) => errors.push(`page: ${e.message}`));
      page.on("requestfailed", (r) => errors.push(`request: ${r.url()} ${r.failure() && r.failure().errorText}`));
      page.on("response", (r) => { if (r.status() >= 400) errors.push(`response: ${r.status()} ${r.url()}`); });
      await page.goto(c.url);
      await page.waitForSelector("#markets-table tbody tr");
      await page.waitForFunction(() => document.querySelector("#connection").textContent.startsWith("updated"));
      return { title: await page.title() };
    }
    case "rows":
      return page.$$eval("#markets-table tbody tr", (trs) => trs.map((tr) => ({
        condition_id: tr.dataset.conditionId,
        cells: Array.from(tr.cells, (td) => td.textContent.trim()),
      })));
    case "select":
      await page.click(`#markets-table tr[data-condition-id="${c.market}"] button`);
      await page.waitForFunction((m) => document.querySelector("#book-market").value === m, c.market);
      return {};
    case "trade": {
      const start = Date.now();
      await page.waitForFunction(([p, s]) => Array.from(document.querySelectorAll("#trades-table tbody tr"))
        .some((tr) => Number(tr.cells[2].textContent) === Number(p) && Number(tr.cells[3].textContent) === Number(s)),
      [c.price, c.size], { timeout: c.timeoutMs });
      return { ms: Date.now() - start };
    }
    case "charts":
      // Two metric samples make the first rate.
      await page.waitForFunction(() => document.querySelector("#now-requests").textContent !== "–");
      return { requests: await page.$eval("#now-requests", (e) => e.textContent) };
    case "stream":
      // The event stream's panel once it shows events waiting.
      await page.waitForFunction(() => Number(document.querySelector("#events-lag").textContent) > 0);
      return page.evaluate(() => Object.fromEntries(["events-to", "events-acked", "events-lag"]
        .map((id) => [id, document.getElementById(id).textContent])));
    case "depth":
      return { label: await page.$eval("#depth title", (t) => t.textContent) };
    case "mode": {
      await page.click(`[data-set-mode="${c.mode}"]`);
      await page.waitForSelector("#confirm[open]");
      if (c.shot) await page.screenshot({ path: c.shot });
      await page.click("#confirm-ok");
      await page.waitForFunction((m) => document.querySelector("#mode").dataset.mode === m, c.mode);
      return { pressed: await page.getAttribute(`[data-set-mode="${c.mode}"]`, "aria-pressed") };
    }
    case "keyboard_mode": {
      // Tab to the button, Enter to open the dialog, Tab to "Switch", Enter.
      await page.evaluate(() => document.activeElement && document.activeElement.blur());
      for (let i = 0; i < 40; i++) {
        await page.keyboard.press("Tab");
        if (await page.evaluate((m) => document.activeElement && document.activeElement.dataset.setMode === m, c.mode)) break;
      }
      await page.keyboard.press("Enter");
      await page.waitForSelector("#confirm[open]");
      while (!(await page.evaluate(() => document.activeElement && document.activeElement.id === "confirm-ok"))) {
        await page.keyboard.press("Tab");
      }
      await page.keyboard.press("Enter");
      await page.waitForFunction((m) => document.querySelector("#mode").dataset.mode === m, c.mode);
      return {};
    }
    case "limit":
      await page.fill("#limit-max", String(c.max));
      await page.fill("#limit-window", String(c.window));
      await page.click("#limit-form button[type=submit]");
      await page.waitForFunction(() => document.querySelector("#limit-result").textContent !== "");
      return { result: await page.$eval("#limit-result", (p) => p.textContent) };
    case "viewport":
      await page.setViewportSize({ width: c.width, height: c.height });
      return {};
    case "shot":
      await page.screenshot({ path: c.path, fullPage: Boolean(c.full) });
      return {};
    case "overflow":
      return page.evaluate(() => ({
        wider: document.documentElement.scrollWidth > window.innerWidth + 1,
        // The outermost elements that stick out, to say what to fix.
        out: Array.from(document.querySelectorAll("body *"))
          .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1
            && !(el.parentElement && el.parentElement.getBoundingClientRect().right > window.innerWidth + 1))
          .map((el) => `${el.tagName.toLowerCase()}#${el.id}.${el.className}`),
      }));
    case "unlabelled":
      // Form controls without an accessible name, and buttons without text.
      return page.evaluate(() => Array.from(document.querySelectorAll("input, select, button"))
        .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute("aria-label") && !el.textContent.trim())
        .map((el) => el.outerHTML));
    case "errors":
      return errors;
    case "close":
      await browser.close();
      return {};
    default:
      throw new Error(`unknown command ${c.cmd}`);
  }
}

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const c = JSON.parse(line);
  let out;
  try {
    out = { ok: true, value: await run(c) };
  } catch (e) {
    out = { ok: false, error: String(e && e.stack || e) };
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
  if (c.cmd === "close") break;
}
process.exit(0);
