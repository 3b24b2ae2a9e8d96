// The workbench driven as a user drives it, through Playwright: the steps the UI tests share
// (tests/e2e/ui.mjs, tests/e2e/firststart-ui.mjs), written once. Each works around a way the real
// workbench drops or delays input, which is why it retries; a fix to one belongs to every test.
// Only the e2e UI tests import it.

/** The settings every UI test starts from: one provider request per chat, our models usable
 * signed out, and the theme of the screenshots. */
export const CHAT_SETTINGS = {
  'workbench.colorTheme': 'Default Dark Modern',
  'chat.byokUtilityModelDefault': 'none',
  'chat.agentHost.allowSignedOutWhenUsable': true,
};

/** Whether `locator` shows within `ms`. */
export function shows(locator, ms) {
  return locator.waitFor({ timeout: ms }).then(
    () => true,
    () => false,
  );
}

/** What covers or holds the page now, for the log line of a try that showed nothing: the dialogs,
 * modal editors, quick inputs and menus shown, and where the keyboard focus is. */
export function pageState(page) {
  return page
    .evaluate(() => {
      const covers = {
        dialog: '.monaco-dialog-box',
        'modal editor': '.modal-editor-part, .ai-models-management-editor',
        'quick input': '.quick-input-widget',
        'context menu': '.context-view .monaco-menu',
        'action widget': '.action-widget',
        notification: '.notifications-toasts .notification-toast',
      };
      const shown = (selector) =>
        [...document.querySelectorAll(selector)].some((e) => e.getClientRects().length > 0 && window.getComputedStyle(e).visibility !== 'hidden');
      const open = Object.entries(covers)
        .filter(([, selector]) => shown(selector))
        .map(([name]) => name);
      const focus = document.activeElement;
      const focused = focus ? [focus.tagName.toLowerCase(), ...[...focus.classList].slice(0, 2)].join('.') : 'nothing';
      return `${open.length ? open.join(', ') : 'no dialog, modal editor, quick input or menu'} shown, focus on ${focused}`;
    })
    .catch((error) => `a page that could not be read (${error.message.split('\n')[0]})`);
}

/** Opens a picker or a menu: `open()` (a click or a key, each with a short timeout of its own), then
 * `menu` must show. The workbench drops input that lands while it re-renders, and a click lands on
 * whatever still covers the target: a dialog or the Language Models editor of the step before, still
 * closing. That is the likeliest cause of a CI failure on the oldest host, where after
 * groups-update-delete's Delete the model picker did not open within 30 s (Playwright's default
 * click timeout, waiting for the button to take the click; a rerun passed). Each try that shows
 * nothing is logged with what the page showed, Escape dismisses what covers it (`escape: false`
 * where the target itself would close, as a menu inside the Language Models editor), and it is
 * tried again, `tries` times in all. */
export async function openMenu(page, what, open, menu, { tries = 3, escape = true } = {}) {
  for (let attempt = 1; ; attempt++) {
    const why = await open().then(
      async () => ((await shows(menu, 5_000)) ? '' : 'nothing opened'),
      (error) => {
        // Playwright's call log names what took the click: the line to keep.
        const lines = error.message.split('\n').map((line) => line.trim());
        return lines.findLast((line) => line.includes('intercepts pointer events')) ?? lines[0];
      },
    );
    if (!why) return;
    const state = await pageState(page);
    if (attempt >= tries) throw new Error(`${what} never opened in ${tries} tries: ${why}; the page showed ${state}`);
    console.log(`ui: ${what}, try ${attempt}: ${why}; the page showed ${state}.${escape ? ' Escape, and' : ''} again`);
    if (escape) await page.keyboard.press('Escape');
    await page.waitForTimeout(500);
  }
}

/** The shared steps on the page `currentPage()` returns (a test opens its page after it starts). */
export function workbench(currentPage) {
  /** Runs a command from the Command Palette. Commands appear as their extensions activate: retried
   * until this one is offered. */
  async function runCommand(title) {
    const page = currentPage();
    const deadline = Date.now() + 90_000;
    for (;;) {
      await page.keyboard.press('F1');
      const input = page.locator('.quick-input-widget input');
      await input.waitFor();
      await input.fill(`>${title}`);
      const row = page.locator('.quick-input-list .monaco-list-row.focused', { hasText: title }).first();
      if (await shows(row, 5_000)) {
        // An Enter the palette drops leaves it open on the command (seen in CI: "4 Results …
        // Choose Gateway Models…" still shown 15 s later): Enter again while the row stays.
        for (let enters = 0; enters < 3; enters++) {
          await page.keyboard.press('Enter');
          const gone = await row.waitFor({ state: 'hidden', timeout: 3_000 }).then(
            () => true,
            () => false,
          );
          if (gone) return;
          console.log(`ui: the Command Palette kept '${title}' after Enter ${enters + 1}; Enter again`);
        }
        throw new Error(`the command '${title}' never ran: the Command Palette kept it after 3 Enters`);
      }
      await page.keyboard.press('Escape');
      if (Date.now() > deadline) throw new Error(`the command '${title}' never appeared`);
    }
  }

  /** A notification saying `text`, as a toast or (once the toast timed out) in the Notification
   * Center, within `ms`. */
  async function findNotification(text, ms = 25_000) {
    const page = currentPage();
    const notification = page.locator('.notifications-toasts .notification-toast, .notifications-center .notification-list-item', { hasText: text }).first();
    if (await shows(notification, Math.max(ms - 10_000, 5_000))) return notification;
    await runCommand('Notifications: Show Notifications');
    if (await shows(notification, 10_000)) return notification;
    throw new Error(`no notification saying '${text}'`);
  }

  /** Closes the Notification Center if findNotification opened it (it would cover the chat input). */
  async function hideNotificationCenter() {
    if (await currentPage().locator('.notifications-center').isVisible()) await runCommand('Notifications: Hide Notifications');
  }

  const chatInput = () => currentPage().locator('.part.auxiliarybar .interactive-input-editor').first();

  /** Opens the model picker until `name` is listed (the widget sometimes renders before its items). */
  async function openPicker(name) {
    const page = currentPage();
    const widget = page.locator('.action-widget').filter({ visible: true }).first();
    for (let attempt = 1; attempt <= 5; attempt++) {
      const button = page.locator('.part.auxiliarybar a.model-picker-name').first(); // 1.133 has no .model-picker-item
      await openMenu(page, 'the model picker', () => button.click({ timeout: 5_000 }), widget);
      // 1.133 covers a new action widget with a pointer block until the mouse moves over it.
      const box = await widget.boundingBox();
      if (box) await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.waitForTimeout(300);
      const more = widget.getByText('Other Models', { exact: true });
      if (await more.isVisible()) {
        await more.click();
        await page.waitForTimeout(300);
      }
      if (await widget.getByText(name, { exact: true }).first().isVisible()) return widget;
      console.log(`ui: the model picker opened without '${name}' (try ${attempt}); Escape, and again`);
      await page.keyboard.press('Escape');
      await page.waitForTimeout(500);
    }
    throw new Error(`'${name}' is not in the model picker`);
  }

  /** Picks `name` in the chat's model picker. */
  async function pickModel(name) {
    const widget = await openPicker(name);
    await widget.getByText(name, { exact: true }).first().click();
    // By its label: beside a model's Thinking Effort menu the name may shrink to an icon.
    await currentPage().locator(`.part.auxiliarybar a.model-picker-name[aria-label$=", ${name}"]`).first().waitFor();
  }

  return { runCommand, findNotification, hideNotificationCenter, chatInput, openPicker, pickModel };
}
