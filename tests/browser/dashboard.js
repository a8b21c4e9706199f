// SPDX-License-Identifier: Apache-2.0
// Focus: the dashboard in a real browser (headless Chromium through
// playwright-core): signing in with a token, the summary line, nodes with
// their GPUs, the queue with a pending job's reason, and no script errors.
// Run by scripts/test-browser.sh, which starts the cluster and passes
// SHOAL_URL, SHOAL_TOKEN and SHOT (where to save a screenshot).
const { chromium } = require("playwright-core");
const assert = require("assert");

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(process.env.SHOAL_URL + "/");
  // A wrong token is refused and the form stays.
  await page.fill("#token", "shoal_wrong");
  await page.click("#go");
  await page.waitForFunction(() => document.getElementById("err").textContent !== "");
  assert.ok(await page.isVisible("#login"));
  await page.fill("#token", process.env.SHOAL_TOKEN);
  await page.click("#go");
  await page.waitForSelector("#queue tr:nth-child(3)", { timeout: 10000 });
  const summary = await page.textContent("#summary");
  assert.match(summary, /^2 nodes, \d+\/4 GPUs busy, 1 running, 1 pending$/);
  const queue = await page.textContent("#queue");
  assert.match(queue, /(resources: needs 2 nodes x 2|reservation: waiting)/);
  assert.equal(await page.locator("#nodes .gpu").count(), 4);
  if (process.env.SHOT) await page.screenshot({ path: process.env.SHOT, fullPage: true });
  assert.deepEqual(errors, []);
  await browser.close();
  console.log("dashboard: ok");
})().catch((e) => { console.error(e); process.exit(1); });
