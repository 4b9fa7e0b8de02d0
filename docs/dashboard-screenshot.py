#!/usr/bin/env python3
"""Screenshot of a running dashboard through chromedriver (WebDriver over HTTP, no client
library): opens URL in headless Chromium at WIDTHxHEIGHT, waits (bounded) until the fabric
picture and the status are on the page, writes OUT.png.

    docs/dashboard-screenshot.py URL OUT.png [WIDTH HEIGHT]

Made docs/dashboard-ft2-36.png from `sm-node demo --fabric ft2:36 --dashboard-listen
127.0.0.1:7280` (see docs/VIEWS.md). Needs Debian's chromium and chromium-driver.
"""
import base64
import json
import subprocess
import sys
import time
import urllib.request

url, out = sys.argv[1], sys.argv[2]
width, height = (int(sys.argv[3]), int(sys.argv[4])) if len(sys.argv) > 4 else (1400, 1900)
PORT = 9519
driver = subprocess.Popen(["chromedriver", f"--port={PORT}"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)


def call(method, path, body=None):
    req = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)["value"]


try:
    deadline = time.time() + 20
    while True:
        try:
            call("GET", "/status")
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)
    caps = {"capabilities": {"alwaysMatch": {"goog:chromeOptions": {"args": [
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--hide-scrollbars", f"--window-size={width},{height}"]}}}}
    sid = call("POST", "/session", caps)["sessionId"]
    try:
        call("POST", f"/session/{sid}/url", {"url": url})
        ready = ("return !!document.querySelector('#fabric svg') && "
                 "document.getElementById('self-id').textContent !== '?'")
        deadline = time.time() + 60
        while not call("POST", f"/session/{sid}/execute/sync", {"script": ready, "args": []}):
            if time.time() > deadline:
                sys.exit("the page did not show the fabric picture and the status within 60 s")
            time.sleep(0.2)
        # One more status poll (every 2 s) so alarms and figures are current.
        time.sleep(2.5)
        png = base64.b64decode(call("GET", f"/session/{sid}/screenshot"))
        open(out, "wb").write(png)
        print(f"{out}: {len(png)} bytes, {width}x{height}")
    finally:
        call("DELETE", f"/session/{sid}")
finally:
    driver.terminate()
    driver.wait()
