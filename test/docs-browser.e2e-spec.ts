import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { freePort, ROOT } from './helpers/service-process';
import { startTestApp, type TestApp } from './helpers/test-app';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = join(ROOT, 'test-artifacts');

if (!existsSync(CHROMIUM)) {
  if (process.env.CI) {
    throw new Error(
      `CI must run the Swagger UI test, but there is no Chromium at ${CHROMIUM}`,
    );
  }
  console.warn(
    `Skipping the Swagger UI browser test: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`,
  );
}
const describeWithChromium = existsSync(CHROMIUM) ? describe : describe.skip;

describeWithChromium('Swagger UI at /docs in a real browser', () => {
  let testApp: TestApp;
  let browser: Browser;
  let baseUrl: string;

  beforeAll(async () => {
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    testApp = await startTestApp({ port, env: { PUBLIC_BASE_URL: baseUrl } });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await testApp?.close();
  });

  it('authorizes with a token and creates a plant with "Try it out"', async () => {
    const token = await testApp.issueToken();
    const page = await browser.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${baseUrl}/docs`);

    await page.locator('.btn.authorize').first().click();
    await page.locator('.modal-ux input').first().fill(token);
    await page.locator('.modal-ux button.authorize').click();
    await page.locator('.modal-ux button.btn-done').click();

    const operation = page
      .locator('#operation-plants-addPlant, #operations-plants-addPlant')
      .first();
    await operation.locator('.opblock-summary').first().click();
    await operation.locator('.try-out__btn').click();
    await operation
      .locator('textarea.body-param__text')
      .fill(
        '{"id": 9007199254740993, "name": "Clicked Calathea", "tag": "browser"}',
      );
    await operation.locator('.execute').click();

    const status = operation
      .locator('.live-responses-table tr.response .response-col_status')
      .first();
    await status.waitFor();
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({
      path: join(ARTIFACTS, 'swagger-ui-post-plants.png'),
      fullPage: true,
    });

    expect((await status.innerText()).trim()).toBe('200');
    expect(
      await operation
        .locator('.live-responses-table tr.response .response-col_description')
        .first()
        .innerText(),
    ).toContain('Clicked Calathea');
    expect(await testApp.query('SELECT id, name, tag FROM plants')).toEqual([
      { id: 9007199254740993n, name: 'Clicked Calathea', tag: 'browser' },
    ]);
  });
});
