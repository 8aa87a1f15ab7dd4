import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { ROOT } from './helpers/service-process';
import { describeWhenAvailable } from './helpers/external-service';
import { freePort } from './helpers/ports';
import { startTestApp, type TestApp } from './helpers/test-app';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = join(ROOT, 'test-artifacts');

describeWhenAvailable(
  existsSync(CHROMIUM) ? undefined : `there is no Chromium at ${CHROMIUM}`,
  'apt-get install -y chromium, or set CHROMIUM_PATH',
  'Swagger UI at /docs in a real browser',
  () => {
    let testApp: TestApp;
    let browser: Browser;
    let port: number;
    // the document names this; the page is opened on other addresses, as behind a proxy or on
    // a laptop, and "Try it out" must still reach the service
    const publicBaseUrl = 'https://plants.example.com';

    beforeAll(async () => {
      port = await freePort();
      testApp = await startTestApp({
        port,
        env: { PUBLIC_BASE_URL: publicBaseUrl },
      });
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

    it('names PUBLIC_BASE_URL in the served document', async () => {
      const response = await testApp.http().get('/openapi.json').expect(200);
      const { servers } = response.body as { servers: { url: string }[] };
      expect(servers.map((server) => server.url)).toEqual([publicBaseUrl]);
      const csp = String(response.headers['content-security-policy']);
      expect(csp).toContain(`connect-src 'self' ${publicBaseUrl}`);
    });

    it.each([
      ['127.0.0.1', 9007199254740993n],
      ['localhost', -9223372036854775808n],
    ])(
      'authorizes with a token and creates a plant with "Try it out", opened on %s',
      async (host, id) => {
        const baseUrl = `http://${host}:${port}`;
        const token = await testApp.issueToken();
        const page = await browser.newPage();
        page.setDefaultTimeout(15_000);
        await page.goto(`${baseUrl}/docs`);
        expect(
          await page.locator('.servers select option').allInnerTexts(),
        ).toEqual([
          expect.stringContaining(baseUrl),
          expect.stringContaining(publicBaseUrl),
        ]);

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
          .fill(`{"id": ${id}, "name": "Clicked Calathea", "tag": "${host}"}`);
        await operation.locator('.execute').click();

        const status = operation
          .locator('.live-responses-table tr.response .response-col_status')
          .first();
        await status.waitFor();
        mkdirSync(ARTIFACTS, { recursive: true });
        await page.screenshot({
          path: join(ARTIFACTS, `swagger-ui-post-plants-${host}.png`),
          fullPage: true,
        });

        expect((await status.innerText()).trim()).toBe('200');
        expect(
          await operation
            .locator(
              '.live-responses-table tr.response .response-col_description',
            )
            .first()
            .innerText(),
        ).toContain('Clicked Calathea');
        expect(
          await testApp.query(
            'SELECT id, name, tag FROM plants WHERE id = ?',
            id,
          ),
        ).toEqual([{ id, name: 'Clicked Calathea', tag: host }]);

        // the Idempotency-Key field starts empty: a key the page filled in would be sent with
        // every create, and the next body refused as "already used for another request"
        expect(
          await operation
            .locator('tr[data-param-name="Idempotency-Key"] input')
            .inputValue(),
        ).toBe('');
        await operation
          .locator('textarea.body-param__text')
          .fill(`{"id": ${id + 1n}, "name": "Second Calathea"}`);
        await operation.locator('.execute').click();
        await operation
          .locator(
            '.live-responses-table tr.response .response-col_description',
            {
              hasText: 'Second Calathea',
            },
          )
          .first()
          .waitFor();
        expect((await status.innerText()).trim()).toBe('200');
      },
    );
  },
);
