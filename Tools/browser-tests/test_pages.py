"""The audit pages in headless Chromium, as a person uses them (started by run.sh against a live
`catledger serve` holding the bundled cafe sample). Each check asserts what is on the screen, and each
page is saved as a screenshot. Prints "N passed, M failed" and exits non-zero on any failure."""

import argparse
import datetime
import os
import re
import sys
import traceback
import urllib.parse
import zoneinfo

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

SLICE = "CDACBVH7G3LMUXI6US6IH3I5"  # Banana Bread, Slice
STALE_OBJECT = "SNQO5I4QBQ6OSX3WME4RXAEW"  # the object edit-0004 sent at a version the POS had moved on


def gone(element):
    """A wait condition: `element` left the document (the page navigated). Chromium's driver says so
    with a stale element, or, when the question races the navigation, with an inspector error that
    the node "does not belong to the document" (selenium's `staleness_of` raised that one)."""
    def check(_):
        try:
            element.is_enabled()
            return False
        except StaleElementReferenceException:
            return True
        except WebDriverException as error:
            if "does not belong to the document" in str(error):
                return True
            raise
    return check


class Browser:
    def __init__(self, args):
        options = Options()
        options.binary_location = os.environ["CHROMIUM"]
        for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1400,1000", "--force-device-scale-factor=1", "--lang=en-US"):
            options.add_argument(flag)
        self.driver = webdriver.Chrome(service=Service(os.environ["CHROMEDRIVER"]), options=options)
        self.driver.set_page_load_timeout(30)
        self.args = args
        self.base = args.url
        self.pages = f"{args.url}/ui/{args.merchant}"

    def open(self, path):
        self.driver.get(self.base + path)

    def label_input(self, label):
        """The form control a visible <label> names (labels are how a person finds a field)."""
        element = self.driver.find_element(By.XPATH, f"//label[normalize-space()='{label}']")
        return self.driver.find_element(By.ID, element.get_attribute("for"))

    def text(self):
        return self.driver.find_element(By.TAG_NAME, "body").text

    def heading(self):
        return self.driver.find_element(By.TAG_NAME, "h1").text

    def path(self):
        parts = urllib.parse.urlsplit(self.driver.current_url)
        return parts.path + ("?" + parts.query if parts.query else "")

    def screenshot(self, name):
        height = self.driver.execute_script("return Math.min(document.documentElement.scrollHeight, 4000)")
        self.driver.set_window_size(1400, max(1000, height))
        self.driver.save_screenshot(os.path.join(self.args.screenshots, name + ".png"))
        self.driver.set_window_size(1400, 1000)

    def submit(self, field):
        field.send_keys(Keys.RETURN)
        WebDriverWait(self.driver, 20).until(gone(field))

    def sign_in(self, token):
        field = self.label_input("API token")
        field.send_keys(token)
        self.submit(field)


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


def test_sign_in(b):
    b.open(f"/ui/{b.args.merchant}/changes")
    expect(b.path().startswith("/ui/login?next="), f"without a token the page redirects to the form, at {b.path()}")
    expect(b.heading() == "Sign in", b.heading())
    b.screenshot("01-sign-in")
    b.sign_in("catl_000000000000_" + "ab" * 32)
    expect("unknown or revoked" in b.text(), "a bad token is refused with a message")
    b.sign_in(b.args.token)
    expect(b.path() == f"/ui/{b.args.merchant}/changes", f"signed in, back at the page asked for: {b.path()}")
    expect(b.heading() == "Change log", b.heading())
    expect("signed in as browser test" in b.text(), "the header names the token")
    expect(not b.driver.find_elements(By.LINK_TEXT, "Metrics"), "a read token is not offered the metrics")
    wider = b.driver.execute_script("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
    expect(wider <= 0, f"the change log fits the window: it is {wider} px wider (its last column cut off)")
    b.screenshot("02-change-log")


def test_keyboard(b):
    b.open(f"/ui/{b.args.merchant}/changes")
    body = b.driver.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.TAB)
    focused = b.driver.switch_to.active_element
    expect(focused.text == "Skip to content", f"the first Tab stop is the skip link, not {focused.text!r}")
    body.send_keys("/")
    expect(b.driver.switch_to.active_element.get_attribute("name") == "q", "'/' focuses the search box")


def test_change_log_filters(b):
    b.open(f"/ui/{b.args.merchant}/changes")
    b.driver.find_element(By.XPATH, "//label[normalize-space()='price']/input").click()
    search = b.label_input("Name (item, variation, category, ...)")
    search.send_keys("banana bred")  # a typo: the fuzzy index still finds it
    b.submit(search)
    expect("type=price" in b.path() and "q=banana" in b.path(), f"the filters are in the URL: {b.path()}")
    text = b.text()
    expect("Banana Bread" in text, "the fuzzy search matched Banana Bread")
    rows = b.driver.find_elements(By.CSS_SELECTOR, "table.changelog tbody tr")
    expect(rows, "price changes of the matches are listed")
    expect(all("price" in row.find_elements(By.TAG_NAME, "td")[2].text for row in rows), "only price changes")
    expect("$3.50" in text, "money as money")
    expect('"amount"' not in text, "no raw money JSON")
    when = rows[0].find_element(By.TAG_NAME, "time")
    expect("Ledger time" in when.get_attribute("title") and "Square time" in when.get_attribute("title"),
           "both clocks on hover")
    b.screenshot("03-change-log-filtered")
    csv = b.driver.find_element(By.PARTIAL_LINK_TEXT, "Export these changes as CSV").get_attribute("href")
    expect("changes.csv" in csv and "type=price" in csv, f"the export keeps the filters: {csv}")
    body = b.driver.execute_async_script(
        "var done = arguments[arguments.length - 1];"
        "fetch(arguments[0], {credentials: 'same-origin'}).then(r => r.text()).then(done);", csv)
    lines = body.splitlines()
    expect(lines[0].startswith("square_time,ledger_time,sequence,object_id"), lines[0])
    expect(len(lines) > 1 and all("price" in line for line in lines[1:]), "the CSV holds the filtered view")


def test_object_page(b):
    b.open(f"/ui/{b.args.merchant}/changes?object={SLICE}")
    link = b.driver.find_element(By.CSS_SELECTOR, f"table.changelog a[href$='/objects/{SLICE}']")
    link.click()
    WebDriverWait(b.driver, 20).until(lambda d: "/objects/" in d.current_url)
    expect(b.path() == f"/ui/{b.args.merchant}/objects/{SLICE}", f"a stable object URL: {b.path()}")
    expect("Timeline" in b.text(), "the timeline is shown")
    expect(b.heading() == "Banana Bread (Slice) (ITEM_VARIATION)", f"the name beside the id: {b.heading()}")
    expect(b.driver.find_elements(By.CSS_SELECTOR, "figure.chart svg"), "the price chart is shown")
    b.screenshot("04-object-now")
    at = b.label_input("View as of (Square time, UTC)")
    at.send_keys("2026-10-05")
    b.submit(at)
    expect("at=2026-10-05" in b.path(), b.path())
    price = b.driver.find_element(By.XPATH, "//dl[@class='facts']/dt[normalize-space()='Price']/following-sibling::dd[1]")
    expect(price.text == "$3.50", f"the Banana Bread slice at $3.50 on 2026-10-05, not {price.text!r}")
    b.screenshot("05-object-as-of-2026-10-05")
    # Its parent, the item: its variations and one chart with every variation's prices.
    parent = b.driver.find_element(By.XPATH, "//h2[normalize-space()='Parent']/following-sibling::p[1]/a")
    parent.click()
    WebDriverWait(b.driver, 20).until(gone(parent))
    expect("Variations and nested objects" in b.text(), "the item lists its variations")
    expect(b.driver.find_elements(By.CSS_SELECTOR, f"a[href$='/objects/{SLICE}']"), "the item links to the slice")
    expect(b.driver.find_elements(By.CSS_SELECTOR, "figure.chart svg"), "the item's chart")
    b.screenshot("06-item")


def test_conflicts(b):
    b.open(f"/ui/{b.args.merchant}/changes")
    b.driver.find_element(By.LINK_TEXT, "Conflicts").click()
    expect(b.heading() == "Conflicts", b.heading())
    Select(b.label_input("Class")).select_by_value("staleMovedOnByOtherWriter")
    button = b.driver.find_element(By.XPATH, "//button[normalize-space()='Apply filters']")
    button.click()
    WebDriverWait(b.driver, 20).until(gone(button))
    expect("class=staleMovedOnByOtherWriter" in b.path(), b.path())
    expect("edit-0004" in b.text(), "edit-0004 is listed under its class")
    b.screenshot("07-conflicts")
    row = b.driver.find_element(By.XPATH, "//tr[td/code[text()='edit-0004']]")
    row.find_element(By.CSS_SELECTOR, "td a").click()
    WebDriverWait(b.driver, 20).until(lambda d: "/conflicts/" in d.current_url)
    expect("staleMovedOnByOtherWriter" in b.heading(), f"the incident is classified: {b.heading()}")
    text = b.text()
    expect(STALE_OBJECT in text, "the incident names the object that moved")
    expect("Danish (Cheese)" in text, "with its name beside its id")
    expect("Fix" in text and "Square had" in text and "Ledger believed" in text, "sent, believed, Square's version, the fix")
    b.screenshot("08-incident-edit-0004")
    b.driver.find_element(By.CSS_SELECTOR, f"section.finding h2 a[href$='/objects/{STALE_OBJECT}']").click()
    WebDriverWait(b.driver, 20).until(lambda d: STALE_OBJECT in d.current_url)
    expect("Timeline" in b.text(), "the incident links to the object's page")


def test_catalog_moment(b):
    b.open(f"/ui/{b.args.merchant}/changes")
    b.driver.find_element(By.LINK_TEXT, "Catalog at a moment").click()
    b.label_input("Moment (Square time, UTC)").send_keys("2026-10-05")
    b.label_input("Compare with (Square time, UTC)").send_keys("2026-10-02")
    search = b.label_input("Search in this moment")
    search.send_keys("banana")
    b.submit(search)
    text = b.text()
    expect("Banana Bread" in text and "$3.50" in text, "the slice at $3.50 in the catalog of 2026-10-05")
    expect("Created (" in text and "Changed (" in text and "Deleted (" in text, "the comparison of two moments")
    b.screenshot("09-catalog-2026-10-05")
    # The whole catalog compared: each changed object by its name as of the later moment, money as money.
    b.open(f"/ui/{b.args.merchant}/catalog?at=2026-10-05&compare=2026-10-03")
    changed = b.driver.find_element(By.XPATH, "//h3[starts-with(text(), 'Changed (')]/following-sibling::table[1]").text
    expect("Changed (2)" in b.text(), "two objects changed between 2026-10-03 and 2026-10-05")
    expect("Affogato (Regular)" in changed and "$5.50" in changed and "$5.60" in changed,
           f"the Affogato's price change, named, in money: {changed[:300]}")
    expect("Chamomile (Pot)" in changed and "$3.50" in changed and "$4.00" in changed, "the Chamomile's too")
    b.screenshot("09b-compare-2026-10-03-with-2026-10-05")
    # The same two moments the other way round: still older -> newer, and the heading says so.
    b.open(f"/ui/{b.args.merchant}/catalog?at=2026-10-03&compare=2026-10-05")
    heading = b.driver.find_element(By.ID, "compare").text
    expect("(older)" in heading and heading.index("2026-10-03") < heading.index("2026-10-05"),
           f"the comparison reads from the older moment to the newer: {heading}")
    expect("Changed (2)" in b.text(), "the same two objects changed, whichever field holds the older moment")
    b.open(f"/ui/{b.args.merchant}/catalog")
    b.screenshot("10-catalog-now")


def test_health(b):
    b.open(f"/ui/{b.args.merchant}/health")
    text = b.text()
    for part in ("Events by kind", "Last sync", "Webhooks by signature", "Compaction runs", "Verification", "Disk use"):
        expect(part in text, f"health shows {part}")
    b.screenshot("11-health")


def paris_text(utc):
    """What a person in Paris reads for an RFC 3339 UTC instant, computed here (not by the server)."""
    seconds = re.sub(r"\.\d+", "", utc).replace("Z", "+00:00")  # the pages show whole seconds
    instant = datetime.datetime.fromisoformat(seconds)
    local = instant.astimezone(zoneinfo.ZoneInfo("Europe/Paris"))
    offset = local.strftime("%z")
    return local.strftime("%Y-%m-%d %H:%M:%S ") + offset[:3] + ":" + offset[3:]


def test_time_zone(b):
    b.open(f"/ui/{b.args.merchant}/objects/{SLICE}")
    zone = b.label_input("Times in")
    zone.clear()
    zone.send_keys("Europe/Paris")
    b.submit(zone)
    expect("tz=Europe%2FParis" in b.path(), f"the zone is in the URL, to paste: {b.path()}")
    times = b.driver.find_elements(By.CSS_SELECTOR, "table.timeline tbody tr:first-child time")
    expect(len(times) == 2, "the newest version shows both clocks")
    for shown in times:
        expected = paris_text(shown.get_attribute("datetime"))
        expect(shown.text == expected, f"a time in Europe/Paris: {shown.text!r}, expected {expected!r}")
        expect(" UTC" in shown.get_attribute("title"), f"the UTC instant on hover: {shown.get_attribute('title')!r}")
    expect(b.label_input("View as of (Square time, Europe/Paris)"), "the form reads times in the zone")
    expect("Square time (Europe/Paris)" in b.driver.page_source, "the chart's axis is dated in the zone")
    b.screenshot("13-object-europe-paris")
    # The choice persists: a page opened without tz= is still in Paris (the cookie).
    b.driver.find_element(By.LINK_TEXT, "Change log").click()
    WebDriverWait(b.driver, 20).until(lambda d: d.current_url.endswith("/changes"))
    first = b.driver.find_element(By.CSS_SELECTOR, "table.changelog tbody tr:first-child time")
    expect(first.text == paris_text(first.get_attribute("datetime")), f"still in Paris: {first.text!r}")
    b.screenshot("14-change-log-europe-paris")
    # A pasted link with tz= shows its zone, whatever the cookie says.
    b.open(f"/ui/{b.args.merchant}/changes?tz=UTC")
    first = b.driver.find_element(By.CSS_SELECTOR, "table.changelog tbody tr:first-child time")
    expect(first.text.endswith(" UTC"), f"tz=UTC in the URL shows UTC: {first.text!r}")


def test_scope(b):
    b.open(f"/ui/{b.args.merchant}/changes")
    button = b.driver.find_element(By.XPATH, "//button[normalize-space()='Sign out']")
    button.click()
    # Waits for the sign-out's redirect by the URL: chromedriver may answer a staleness check on the
    # button with an inspector error ("Node ... does not belong to the document") instead of stale.
    WebDriverWait(b.driver, 20).until(lambda driver: b.path().startswith("/ui/login"))
    expect(b.heading() == "Sign in", "signed out")
    b.open(f"/ui/{b.args.merchant}/conflicts")
    b.sign_in(b.args.metrics_token)
    expect(b.heading() == "Not allowed", f"a metrics token may not read the ledger: {b.heading()}")
    expect("may not read" in b.text(), "the page says why")
    b.screenshot("12-not-allowed")


TESTS = [test_sign_in, test_keyboard, test_change_log_filters, test_object_page, test_conflicts, test_catalog_moment,
         test_health, test_time_zone, test_scope]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--merchant", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--metrics-token", required=True)
    parser.add_argument("--screenshots", required=True)
    args = parser.parse_args()
    browser = Browser(args)
    passed = failed = 0
    try:
        for test in TESTS:
            try:
                test(browser)
                passed += 1
                print(f"ok   {test.__name__}")
            except Exception:  # noqa: BLE001 (every failure is reported, then the next test runs)
                failed += 1
                print(f"FAIL {test.__name__} at {browser.driver.current_url}")
                traceback.print_exc()
                browser.screenshot("failed-" + test.__name__)
    finally:
        browser.driver.quit()
    print(f"browser tests: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
