#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# Focus: the dashboard in a real browser (headless Chromium driven through
# WebDriver: Debian's chromium-driver and python3-selenium): a wrong token
# refused, signing in, the summary, nodes with their GPUs, the queue with a
# pending job's reason; the job view of MINE (the signed-in user's pending
# job): its reason, hold, release, cancel; OTHER (a job the user may see
# but not touch) offered no action, with its output and its attempts
# list; signing out; and no
# script errors. Run by tests/system/069-dashboard.bats, which starts the
# cluster and passes SHOAL_URL, SHOAL_TOKEN, MINE, OTHER and SHOT (where to
# save a screenshot, optional).
import os
import re
import sys
import traceback

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import (NoSuchElementException,
                                        StaleElementReferenceException)
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

URL, TOKEN = os.environ["SHOAL_URL"], os.environ["SHOAL_TOKEN"]
MINE, OTHER = os.environ["MINE"], os.environ["OTHER"]


def main():
    opts = webdriver.ChromeOptions()
    opts.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu",
              "--disable-dev-shm-usage", "--disable-background-networking",
              "--disable-component-update", "--disable-sync",
              "--no-first-run", "--window-size=1200,900"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    d = webdriver.Chrome(service=service, options=opts)
    try:
        run(d)
    finally:
        d.quit()
    print("dashboard: ok")


def wait(d, what, cond, timeout=15):
    try:
        return WebDriverWait(d, timeout, poll_frequency=0.1).until(
            lambda _: cond())
    except Exception:
        raise AssertionError("timed out waiting for " + what)


def text(d, id_):
    try:
        return d.find_element(By.ID, id_).text
    except StaleElementReferenceException:
        return ""


def shown(d, id_):
    els = d.find_elements(By.ID, id_)
    return bool(els) and els[0].is_displayed()


def actions(d):
    """The actions offered, or None while the buttons are being redrawn."""
    try:
        return sorted(b.get_attribute("data-action") for b in
                      d.find_elements(By.CSS_SELECTOR, "#job-actions button"))
    except StaleElementReferenceException:
        return None


def attempt_rows(d):
    """The rows of the job's attempts list (without its header)."""
    try:
        return [r.text for r in d.find_elements(
            By.CSS_SELECTOR, "#job-attempt-list tr")][1:]
    except StaleElementReferenceException:
        return []


def click(d, css):
    """Click what css selects; the page redraws its tables every 2 s, so
    an element found just before a redraw is tried again."""
    def attempt():
        try:
            d.find_element(By.CSS_SELECTOR, css).click()
            return True
        except (StaleElementReferenceException, NoSuchElementException):
            return False
    wait(d, "to click " + css, attempt)


def run(d):
    d.get(URL + "/")
    # A wrong token is refused and the form stays.
    d.find_element(By.ID, "token").send_keys("shoal_wrong")
    d.find_element(By.ID, "go").click()
    wait(d, "the error", lambda: text(d, "err") != "")
    assert shown(d, "login")
    d.find_element(By.ID, "token").clear()
    d.find_element(By.ID, "token").send_keys(TOKEN)
    d.find_element(By.ID, "go").click()
    wait(d, "the queue", lambda: len(d.find_elements(
        By.CSS_SELECTOR, "#queue tr")) >= 3)
    wait(d, "who is signed in", lambda: text(d, "whoami") ==
         "Signed in as alice")
    assert re.match(r"^2 nodes, \d+/4 GPUs busy, 1 running, 1 pending$",
                    text(d, "summary")), text(d, "summary")
    assert re.search(r"resources: needs 2 nodes x 2|reservation: waiting",
                     text(d, "queue")), text(d, "queue")
    assert len(d.find_elements(By.CSS_SELECTOR, "#nodes .gpu")) == 4

    # Open my pending job from the queue: its reason, and what I may do.
    click(d, "#queue a[href='#job/%s']" % MINE)
    wait(d, "the job view", lambda: text(d, "job-title").startswith(
        "Job " + MINE))
    assert not shown(d, "dash")
    wait(d, "the reason", lambda: re.match(
        r"^Reason: (resources|reservation):", text(d, "job-reason")))
    assert text(d, "job-state") == "pending", text(d, "job-state")
    assert text(d, "job-attempts").startswith("First attempt"), \
        text(d, "job-attempts")
    assert "Estimated start" in text(d, "job-estimate") or \
        "no estimate" in text(d, "job-estimate")
    assert "2 nodes x 2 GPUs" in text(d, "job-spec"), text(d, "job-spec")
    wait(d, "hold and cancel offered", lambda: actions(d) == ["cancel", "hold"])

    click(d, "#act-hold")
    wait(d, "held", lambda: text(d, "job-state") == "pending, held")
    wait(d, "release offered", lambda: actions(d) == ["cancel", "release"])
    assert text(d, "job-reason").startswith("Reason: held"), \
        text(d, "job-reason")

    click(d, "#act-release")
    wait(d, "released", lambda: text(d, "job-state") == "pending")
    wait(d, "hold offered again", lambda: actions(d) == ["cancel", "hold"])

    click(d, "#act-cancel")
    d.switch_to.alert.accept()  # "Cancel job N?"
    wait(d, "cancelled", lambda: text(d, "job-state") == "cancelled")
    wait(d, "requeue only", lambda: actions(d) == ["requeue"])
    assert text(d, "job-reason") == "Reason: cancelled by alice"
    assert text(d, "job-err") == ""

    # Someone else's job: visible with its output, no action offered.
    d.get(URL + "/#job/" + OTHER)
    wait(d, "the other job", lambda: text(d, "job-title").startswith(
        "Job " + OTHER))
    wait(d, "its output", lambda: "hello from the job" in text(d, "job-logs"))
    assert text(d, "job-state") == "running"
    assert actions(d) == [], actions(d)
    # Its attempts list: the one it runs, started, on its node.
    wait(d, "its attempts list", lambda: re.search(
        r"^0 running \S+ - node\d", attempt_rows(d)[0] if attempt_rows(d)
        else "", re.M))
    if os.environ.get("SHOT"):
        d.save_screenshot(os.environ["SHOT"])

    # Back to the cluster, then sign out: the token is forgotten.
    d.find_element(By.ID, "job-back").click()
    wait(d, "the cluster view", lambda: shown(d, "dash"))
    d.find_element(By.ID, "signout").click()
    wait(d, "the sign-in form", lambda: shown(d, "login"))
    assert not shown(d, "dash") and not shown(d, "jobview")
    assert text(d, "summary") == "" and text(d, "whoami") == ""
    assert not shown(d, "signout")
    d.get(URL + "/")
    wait(d, "the sign-in form after a reload", lambda: shown(d, "login"))
    assert d.execute_script(
        "return sessionStorage.getItem('shoal-token')") is None

    errors = [e["message"] for e in d.get_log("browser")
              if e["level"] == "SEVERE" and "shoal_wrong" not in e["message"]
              and "401" not in e["message"]]
    assert errors == [], errors


if __name__ == "__main__":
    try:
        main()
    except AssertionError:
        traceback.print_exc()
        print("dashboard: FAILED", file=sys.stderr)
        sys.exit(1)
