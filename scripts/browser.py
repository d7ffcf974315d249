"""What the browser tests share: headless Chromium (Debian's chromium and
chromium-driver) through Selenium, a page object that finds controls by their
visible labels, the API over urllib, axe-core, and the sample roster."""
import csv
import importlib.util
import json
import os
import time
import urllib.error
import urllib.request

from selenium import webdriver
import traceback

from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.errorhandler import ErrorHandler
from selenium.webdriver.common.by import By
from selenium.webdriver.support.expected_conditions import staleness_of
from selenium.webdriver.support.ui import WebDriverWait

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("BIN_DIR", os.path.join(ROOT, ".build", "debug"))
ROSTER = os.path.join(ROOT, "examples", "roster")
SHOTS = os.path.abspath(os.environ.get("SCREENSHOT_DIR", os.path.join(ROOT, "var", "screenshots")))


class Checks:
    """Counts what passed; the first failure raises with its description."""

    def __init__(self):
        self.passed = 0

    def __call__(self, condition, what):
        if not condition:
            raise AssertionError(what)
        self.passed += 1


def student(grade, class_number, number):
    """The sample roster's row at that seat."""
    with open(os.path.join(ROSTER, "students.csv"), encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if (row["grade"], row["class"], row["number"]) == (str(grade), str(class_number), str(number)):
                return row
    raise SystemExit(f"the sample roster has no student at {grade}-{class_number}-{number}")


def student_name(grade, class_number, number):
    return student(grade, class_number, number)["name"]


class StaleAwareErrors(ErrorHandler):
    """Chromedriver answers "Node with given id does not belong to the document" instead of a stale element when
    the page is replaced (a sign-in's answer, a navigation) in the middle of a command on one of its elements;
    the tests' waits already look again on a stale element, so it is raised as one."""

    def check_response(self, response):
        try:
            super().check_response(response)
        except WebDriverException as error:
            if "does not belong to the document" in (error.msg or ""):
                raise StaleElementReferenceException(error.msg) from error
            raise


def where(failure):
    """Where a test failed: the frames of the project's own scripts, innermost first."""
    frames = [f for f in traceback.extract_tb(failure.__traceback__) if f.filename.startswith(os.path.join(ROOT, "scripts"))]
    return " <- ".join(f"{os.path.basename(f.filename)} line {f.lineno} ({f.line})" for f in reversed(frames[-4:]))


def browser(width=1280, height=800, phone=False):
    """Headless Chromium; `phone` makes the viewport exactly width×height, touch, 2× pixels."""
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={width},{height}", "--lang=ko-KR"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.error_handler = StaleAwareErrors()
    if phone:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 2, "mobile": True})
        driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": True})
    driver.execute_cdp_cmd("Network.enable", {})
    return driver


def network(driver, offline=False, latency=0, kbits=0):
    """Chrome DevTools network emulation; no arguments: the real network again."""
    throughput = kbits * 1000 / 8 if kbits else -1
    driver.execute_cdp_cmd("Network.emulateNetworkConditions", {
        "offline": offline, "latency": latency, "downloadThroughput": throughput, "uploadThroughput": throughput})


class Page:
    def __init__(self, driver, base):
        self.driver = driver
        self.base = base

    def wait(self, condition, what, seconds=20):
        try:
            # The scripts replace what they render, so an element read a moment ago may be gone, and a click that
            # signs in navigates, so the next page's elements may not be there yet: look again.
            return WebDriverWait(self.driver, seconds, poll_frequency=0.1,
                                 ignored_exceptions=(StaleElementReferenceException, NoSuchElementException)).until(
                lambda d: condition())
        except TimeoutException:
            raise AssertionError(f"timed out waiting for {what}; page text: {self.text('body')[:600]!r}")

    def find(self, css):
        element = self.driver.find_element(By.CSS_SELECTOR, css)
        # A teacher opens the app's tab an element is on before using it.
        tab = self.driver.execute_script(
            "const panel = arguments[0].closest('[role=tabpanel]');"
            "return panel && panel.hidden ? document.getElementById(panel.getAttribute('aria-labelledby')) : null;", element)
        if tab:
            tab.click()
        return element

    def tab(self, name):
        """Taps the app's tab `name` (gate, lists, overview, service, inbox, admin, settings)."""
        self.driver.find_element(By.ID, f"tab-{name}").click()
        self.wait(lambda: self.driver.find_element(By.ID, f"panel-{name}").is_displayed(), f"the {name} tab")

    def text(self, css):
        for _ in range(20):
            try:
                return self.find(css).text
            except StaleElementReferenceException:
                time.sleep(0.05)
        return self.find(css).text

    def button(self, label, within="body"):
        return self.find(within).find_element(By.XPATH, f".//button[normalize-space()='{label}']")

    def open(self, path=""):
        self.driver.get(self.base + path)

    def sign_in(self, token, path=""):
        self.open(path)
        self.wait(lambda: self.driver.find_elements(By.ID, "token"), "the sign-in form")
        if not self.driver.find_element(By.XPATH, "//details[summary]").get_attribute("open"):
            self.driver.find_element(By.XPATH, "//summary[normalize-space()='접속 키로 로그인']").click()
        field = self.driver.find_element(By.XPATH, "//label[normalize-space()='접속 키']/following::input[1]")
        field.clear()
        field.send_keys(token)
        # The form posts and the answer is a new page (the app, or the form with its error): wait for it, since
        # the click may return before the old page is gone.
        old_page = self.driver.find_element(By.TAG_NAME, "html")
        self.button("로그인").click()
        WebDriverWait(self.driver, 20).until(staleness_of(old_page), "the page the sign-in answers with")

    def sign_out(self):
        self.button("로그아웃").click()
        self.wait(lambda: self.driver.find_elements(By.ID, "token"), "the sign-in form after signing out")

    def photo_state(self):
        """The face check's photo as the teacher sees it: its words, or 'photo shown'."""
        return self.text("#photo-state") if self.find("#photo-state").is_displayed() else "photo shown"

    def cookie(self, name):
        return next((c for c in self.driver.get_cookies() if c["name"] == name), None)

    def labelled(self, label):
        """The control a visible <label> names."""
        target = self.driver.find_element(By.XPATH, f"//label[normalize-space()='{label}']").get_attribute("for")
        return self.driver.find_element(By.ID, target)

    def shot(self, name, width, height, full=False):
        """A screenshot at width×height; `full`: the whole page, as long as it is."""
        self.driver.set_window_size(width, height)
        time.sleep(0.3)
        path = os.path.join(SHOTS, f"{name}-{width}x{height}.png")
        if full:
            tall = self.driver.execute_script("return Math.ceil(document.documentElement.scrollHeight)")
            self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": width, "height": max(height, tall), "deviceScaleFactor": 1, "mobile": True})
            time.sleep(0.2)
            self.driver.save_screenshot(path)
            self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 2, "mobile": True})
        else:
            self.driver.save_screenshot(path)
        return path


def respond(driver, yes, seconds=5):
    """The app's own question (common.js `ask`, a modal <dialog>): waits for it,
    taps its first button (`yes`) or its second, and returns the question's
    text. Tab and Esc stay inside it while it is open."""
    def question():
        shown = driver.find_elements(By.CSS_SELECTOR, "dialog#ask[open]")
        return shown[0] if shown else None
    dialog = WebDriverWait(driver, seconds, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: question())
    text = dialog.find_element(By.ID, "ask-text").text
    dialog.find_element(By.ID, "ask-yes" if yes else "ask-no").click()
    WebDriverWait(driver, seconds).until(lambda d: not question())
    return text


def kept(driver):
    """What the page's origin keeps in Cache Storage, as 'cache /path' lines."""
    return driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "caches.keys().then(async (names) => { const all = [];"
        " for (const name of names) { for (const r of await (await caches.open(name)).keys()) all.push(name + ' ' + new URL(r.url).pathname); }"
        " done(all); }, () => done([]));")


def wait_for(what, condition, seconds=30):
    """Polls `condition` every 0.3 s; returns its first truthy value, or fails after `seconds`."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def choose_seat(gate, grade, class_number, number):
    """Taps grade, class and number on the gate page's grids, from wherever it stands."""
    gate.wait(lambda: gate.driver.find_elements(By.CSS_SELECTOR, "#grid button") or gate.find("#check").is_displayed(), "the seat grids")
    if gate.find("#check").is_displayed():
        gate.button("번호 다시 고르기").click()
    while gate.text("#step-title") != "학년":
        gate.button("이전").click()
    gate.button(f"{grade}학년", "#grid").click()
    gate.button(f"{class_number}반", "#grid").click()
    gate.button(str(number), "#grid").click()


def api(method, url, token=None, origin=None, cookie=None, body=None):
    data = json.dumps(body).encode() if body is not None else (b"{}" if method == "POST" else None)
    request = urllib.request.Request(url, method=method, data=data)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if origin:
        request.add_header("Origin", origin)
    if cookie:
        request.add_header("Cookie", cookie)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
            kind = response.headers.get("Content-Type", "")
            return response.status, json.loads(raw or b"null") if "json" in kind else raw
    except urllib.error.HTTPError as error:
        raw = error.read()
        try:
            return error.code, json.loads(raw or b"null")
        except ValueError:
            return error.code, raw


AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]


def axe_source():
    spec = importlib.util.find_spec("axe_playwright_python")
    if not spec:
        raise SystemExit("axe-core is missing: scripts/setup installs it (axe-playwright-python's bundled axe.min.js)")
    with open(os.path.join(spec.submodule_search_locations[0], "axe.min.js"), encoding="utf-8") as f:
        return f.read()


def axe(driver, source):
    """axe-core's violations (wcag2a … wcag22aa) on the page as it stands, as 'rule: targets' lines."""
    if not driver.execute_script("return !!window.axe"):
        driver.execute_script(source)
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {runOnly: {type: 'tag', values: arguments[0]}}).then((r) => done(r.violations.map((v) => v.id + ': ' + "
        "v.nodes.map((n) => n.target.join(' ')).join(', ')))).catch((e) => done(['axe failed: ' + e]));", AXE_TAGS)
    return result


CONTRAST = """
const rgb = (text) => (text.match(/[\\d.]+/g) || []).map(Number);
const luminance = ([r, g, b]) => [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
  .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
const ratio = (a, b) => { const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
const behind = (node) => { for (let n = node.parentElement; n; n = n.parentElement) { const c = rgb(getComputedStyle(n).backgroundColor); if (c.length === 3 || c[3] > 0.9) return c.slice(0, 3); } return [255, 255, 255]; };
const weak = [];
// The focus ring every control shows (the style sheet's :focus-visible rule).
const rule = [...document.styleSheets].flatMap((sheet) => [...sheet.cssRules]).find((r) => r.selectorText === ':focus-visible');
if (!rule || !rule.style.outlineColor) weak.push('no :focus-visible outline in the style sheet');
const probe = document.createElement('span');
probe.style.color = rule ? rule.style.outlineColor : 'transparent';
document.body.append(probe);
const ringColour = rgb(getComputedStyle(probe).color);
probe.remove();
for (const node of document.querySelectorAll('button, input, textarea, select, summary, a')) {
  if (!node.offsetParent) continue;
  const style = getComputedStyle(node);
  const label = node.tagName + ' ' + (node.textContent.trim() || node.id);
  const around = behind(node);
  if (parseFloat(style.borderTopWidth) > 0 && ratio(rgb(style.borderTopColor), around) < 3) weak.push(label + ' border ' + style.borderTopColor);
  if (ratio(ringColour, around) < 3) weak.push(label + ' focus ring ' + ringColour);
}
return weak;
"""


def tidiness(driver, source):
    """What a page in its current state gets wrong, as lines: axe-core's
    violations (wcag2a … wcag22aa); control borders and the focus ring under
    3:1 against what is around them (WCAG 1.4.11, 2.4.13); buttons, summaries
    and links smaller than 44×44 px."""
    problems = axe(driver, source)
    problems += [f"contrast: {weak}" for weak in driver.execute_script(CONTRAST)]
    problems += [f"target: {small}" for small in driver.execute_script(
        "return [...document.querySelectorAll('button, summary, a')].filter((e) => e.offsetParent)"
        ".map((e) => [e.textContent.trim(), e.getBoundingClientRect()]).filter(([, r]) => r.width < 44 || r.height < 44)"
        ".map(([t, r]) => t + ' ' + Math.round(r.width) + 'x' + Math.round(r.height))")]
    return problems
