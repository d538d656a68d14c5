"""test_server_page.py: the page at / of nmt-server, in a real headless browser.

Starts nmt-server on the CPU backend on a free port of 127.0.0.1 (bounded:
--max-requests, --timeout and this script's own timeouts), opens
http://127.0.0.1:PORT/ in headless Chromium through Selenium and
chromium-driver, then checks:
- two lines typed into the text box and Translate clicked: the two lines
  shown are what `translate` prints for them with the same options;
- an empty submit shows nothing and no error;
- a line the server refuses (5000 bytes, over max_line_bytes 4096: a 400 with
  an error) shows the server's error text and no translation;
- SIGTERM: the server exits 0.
Skips (77) when nmt-server was not built (no libmicrohttpd/jansson) or when
Selenium, Chromium or chromedriver are missing (Debian: chromium
chromium-driver python3-selenium; .ci/run installs them, so CI runs it)."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

SERVER = os.environ.get("NMT_SERVER", "")
TRANSLATE = os.environ.get("NMT_TRANSLATE", "")
MODEL = os.environ.get("NMT_TEST_MODEL", "")
OPTIONS = ["--device", "cpu"]
LINES = ["ein mann spielt im park .", "zwei hunde laufen über die straße ."]
LONG_LINE = ("hund " * 1000).strip()  # 4999 bytes: over the default max_line_bytes (4096)
WAIT_S = 30       # each wait for the page to show an answer
DEADLINE_S = 240  # the whole test; beyond, everything is killed and it fails
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def skip(why):
    print(f"test_server_page: skipped: {why}")
    return 77


def find_browser():
    """Chromium and its driver, or a reason to skip."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return None, None, "no selenium (python3-selenium)"
    browser = next((p for p in map(shutil.which, ["chromium", "chromium-browser", "google-chrome"])
                    if p), None)
    driver = shutil.which("chromedriver") or next(
        (p for p in ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]
         if os.access(p, os.X_OK)), None)
    if not browser:
        return None, None, "no chromium"
    if not driver:
        return None, None, "no chromedriver (chromium-driver)"
    return browser, driver, None


def start_server(log):
    cmd = [SERVER, "-m", MODEL, *OPTIONS, "--host", "127.0.0.1", "--port", "0",
           "--max-requests", "50", "--timeout", "5"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
    line = [""]
    reader = threading.Thread(target=lambda: line.__setitem__(0, proc.stdout.readline()),
                              daemon=True)
    reader.start()
    reader.join(timeout=60)
    if "listening on" not in line[0]:  # "nmt-server: listening on http://127.0.0.1:PORT"
        proc.kill()
        proc.wait(timeout=30)
        log.seek(0)
        raise RuntimeError(f"the server did not start: {line[0]!r} {log.read()}")
    return proc, int(line[0].rsplit(":", 1)[1])


def start_driver(browser, chromedriver, state, driver_log):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.remote.remote_connection import RemoteConnection
    try:
        RemoteConnection.set_timeout(60)  # each WebDriver command (default: none)
    except AttributeError:
        pass
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--no-first-run", "--disable-extensions", "--window-size=1000,800"]:
        options.add_argument(arg)
    # Its own session, so that the watchdog can kill chromedriver and its browser together.
    service = Service(executable_path=chromedriver, service_args=[f"--log-path={driver_log}"],
                      popen_kw={"start_new_session": True})
    state["service"] = service
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(30)
    driver.set_script_timeout(30)
    return driver


def text(driver, element_id):
    """The element's textContent, exactly (WebElement.text normalises white space)."""
    return driver.execute_script(f"return document.getElementById('{element_id}').textContent;")


def submit(driver, typed, wait=True, pasted=""):
    """Clear the text box, put in pasted (as a paste would: typing thousands of keys takes
    seconds), type, click Translate and (wait) wait until the page shows a translation or an
    error, or WAIT_S passed. Returns (out, err)."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    box = driver.find_element(By.ID, "src")
    box.clear()
    if pasted:
        driver.execute_script("arguments[0].value = arguments[1];", box, pasted)
    if typed:
        box.send_keys(typed)
    driver.find_element(By.ID, "go").click()
    if not wait:
        return text(driver, "out"), text(driver, "err")
    try:
        WebDriverWait(driver, WAIT_S, poll_frequency=0.1).until(
            lambda d: text(d, "out") or text(d, "err"))
    except TimeoutException:
        pass
    return text(driver, "out"), text(driver, "err")


def page_checks(driver, port, ref, long_error):
    from selenium.webdriver.common.by import By
    driver.get(f"http://127.0.0.1:{port}/")
    check(driver.title == "nmt-server", f"the page's title: {driver.title!r}")
    src = driver.find_element(By.ID, "src")
    check(src.tag_name == "textarea", "a text box")
    check(driver.find_element(By.ID, "go").text == "Translate", "a Translate button")

    out, err = submit(driver, "\n".join(LINES))
    check(src.get_attribute("value") == "\n".join(LINES), "the text box holds the typed lines")
    check(out.split("\n") == ref and err == "",
          f"two lines: the page shows {out!r} (error {err!r}), translate prints {ref!r}")

    # An empty submit clears the answer and shows nothing, no error (and sends nothing).
    driver.execute_script("document.getElementById('out').textContent = 'stale';")
    submit(driver, "", wait=False)
    time.sleep(1)  # an answer or an error, were a request sent, would show within this
    check(text(driver, "out") == "" and text(driver, "err") == "",
          f"an empty submit: out {text(driver, 'out')!r}, error {text(driver, 'err')!r}")

    # A line the server refuses: its error, no translation.
    out, err = submit(driver, LONG_LINE[-5:], pasted=LONG_LINE[:-5])
    check(src.get_attribute("value") == LONG_LINE, "the text box holds the long line")
    check(out == "" and err == long_error,
          f"a refused line: out {out!r}, error {err!r}, the server's error {long_error!r}")

    # And a good request after it still works.
    out, err = submit(driver, LINES[0])
    check(out == ref[0] and err == "", f"a line after the refused one: {out!r} {err!r}")

    logs = []
    try:
        logs = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE" and
                "favicon" not in e.get("message", "") and "400" not in e.get("message", "")]
    except Exception:  # noqa: BLE001 (not every driver gives logs)
        pass
    check(not logs, f"the browser's console has errors: {logs[:3]}")


def server_error(port, line):
    """The error the server gives for one line, asked directly (the page must show it)."""
    body = json.dumps([{"src": line, "id": 0}]).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/translator/translate", data=body,
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, ""
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}").get("error", "")


def kill_browser(service):
    """chromedriver and the browser it started (its session), at once."""
    process = getattr(service, "process", None) if service else None
    if process is not None and process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass


def main():
    if not SERVER or not os.path.exists(SERVER):
        return skip("nmt-server not built (NMT_SERVER unset or missing)")
    browser, chromedriver, why = find_browser()
    if why:
        return skip(why)
    out = subprocess.run([TRANSLATE, "-m", MODEL, *OPTIONS], input="\n".join(LINES) + "\n",
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    ref = out.stdout.split("\n")[:-1]
    assert len(ref) == len(LINES), out.stdout

    started = time.time()
    state = {"proc": None, "service": None}

    def watchdog():
        print(f"FAIL: the test ran past {DEADLINE_S} s: killed", file=sys.stderr, flush=True)
        if state["proc"] and state["proc"].poll() is None:
            state["proc"].kill()
        kill_browser(state["service"])
        os._exit(1)

    timer = threading.Timer(DEADLINE_S, watchdog)
    timer.daemon = True
    timer.start()
    log = tempfile.TemporaryFile(mode="w+")
    tmp_dir = tempfile.TemporaryDirectory(prefix="test_server_page.")
    tmp = tmp_dir.name
    try:
        proc, port = start_server(log)
        state["proc"] = proc
        code, long_error = server_error(port, LONG_LINE)
        check(code == 400 and long_error, f"the server refuses the long line: {code} "
                                          f"{long_error!r}")
        driver = None
        driver_log = os.path.join(tmp, "chromedriver.log")
        try:
            driver = start_driver(browser, chromedriver, state, driver_log)
            page_checks(driver, port, ref, long_error)
        except Exception as e:  # noqa: BLE001 (a failure, with what chromedriver saw)
            check(False, f"the browser: {type(e).__name__}: {e}")
        finally:
            if driver is not None:
                quitter = threading.Thread(target=driver.quit, daemon=True)
                quitter.start()
                quitter.join(timeout=30)
            kill_browser(state["service"])  # what quit left, or a driver that did not start
        if failures and os.path.exists(driver_log):
            with open(driver_log, errors="replace") as f:
                tail = [line.rstrip() for line in f.readlines()[-40:]]
            print("chromedriver's log, the end:", *tail, sep="\n  ", file=sys.stderr)
        proc.send_signal(signal.SIGTERM)
        check(proc.wait(timeout=30) == 0, f"exit status 0 after SIGTERM: {proc.returncode}")
        log.seek(0)
        check("stopped after" in log.read(), "the server says it stopped")
    finally:
        proc = state["proc"]
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        timer.cancel()
        log.close()
        tmp_dir.cleanup()
    if failures:
        print(f"test_server_page: {len(failures)} failure(s)")
        return 1
    print(f"test_server_page: passed in {time.time() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
