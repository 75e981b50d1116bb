#!/usr/bin/env python3
"""Open etsim's HTML reports in headless Chromium and check them as a reader would see them.

    browser_check.py [--chromium PATH] [--shots DIR] PAGE.html=chart,chart,... ...

For each page, in one Chromium driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: no port, no network, Python's standard library only):
  - no console error, no uncaught exception, no error logged by the renderer
    (an SVG attribute such as d="M0 NaN" is logged as an error);
  - no request other than the file itself and data: URIs (the page is self-contained);
  - every named chart is present (an element with data-chart=NAME holding an SVG
    with drawn marks);
  - a full-page screenshot (written to DIR/<page>.png) that is not blank: enough
    non-white pixels and colours.
Prints one line per page and exits 1 on the first failed check, 2 when Chromium
cannot be started.  Chromium runs with the flags of a closed machine (no sandbox,
no GPU, no background networking, a fresh profile).
"""
import argparse
import base64
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import zlib

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--mute-audio",
         "--remote-debugging-pipe"]


class Browser:
    def __init__(self, exe):
        self.profile = tempfile.mkdtemp(prefix="etsim-chromium-")
        r1, w1 = os.pipe()  # we write, Chromium reads fd 3
        r2, w2 = os.pipe()  # Chromium writes fd 4, we read

        def child():
            a, b = os.dup(r1), os.dup(w2)
            os.dup2(a, 3)
            os.dup2(b, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.proc = subprocess.Popen([exe] + FLAGS + ["--user-data-dir=" + self.profile,
                                                      "about:blank"],
                                     preexec_fn=child, close_fds=False,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        os.close(r1)
        os.close(w2)
        self.w = w1
        self.r = r2
        self.buf = b""
        self.next_id = 0
        self.events = []

    def _read(self):
        while b"\0" not in self.buf:
            d = os.read(self.r, 1 << 16)
            if not d:
                err = self.proc.stderr.read().decode(errors="replace")[-2000:]
                raise RuntimeError("Chromium closed the pipe: " + err)
            self.buf += d
        msg, _, self.buf = self.buf.partition(b"\0")
        return json.loads(msg)

    def call(self, method, params=None, session=None):
        self.next_id += 1
        m = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            m["sessionId"] = session
        data = json.dumps(m).encode() + b"\0"
        while data:
            data = data[os.write(self.w, data):]
        while True:
            m = self._read()
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, session):
        for e in self.events:
            if e.get("method") == method and e.get("sessionId") == session:
                return e
        while True:
            e = self._read()
            self.events.append(e)
            if e.get("method") == method and e.get("sessionId") == session:
                return e

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def png_pixels(data):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), "unexpected PNG format"
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + ((a + b) >> 1)) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def not_blank(png):
    """Share of non-white pixels and number of distinct colours (sampled)."""
    w, h, bpp, rows = png_pixels(png)
    ink = total = 0
    colours = set()
    for y in range(h):
        row = rows[y]
        for x in range(w):
            r, g, b = row[x * bpp], row[x * bpp + 1], row[x * bpp + 2]
            total += 1
            if r < 235 or g < 235 or b < 235:
                ink += 1
            colours.add((r >> 3, g >> 3, b >> 3))
    return w, h, ink / max(total, 1), len(colours)


CHECK_CHARTS = """(() => {
  const want = %s, out = {};
  for (const id of want) {
    const figs = document.querySelectorAll('[data-chart="' + id + '"]');
    let marks = 0;
    figs.forEach(f => { const s = f.querySelector('svg');
      if (s) marks += s.querySelectorAll('rect,path,circle,line,image,polyline').length; });
    out[id] = {figures: figs.length, marks: marks};
  }
  out.__all = Array.from(document.querySelectorAll('[data-chart]')).map(e => e.dataset.chart);
  out.__height = Math.ceil(document.documentElement.scrollHeight);
  out.__footer = (document.querySelector('footer') || {}).textContent || '';
  return out;
})()"""


def check_page(br, path, charts, shots):
    fails = []
    t = br.call("Target.createTarget", {"url": "about:blank"})
    s = br.call("Target.attachToTarget", {"targetId": t["targetId"], "flatten": True})["sessionId"]
    for d in ("Page", "Runtime", "Log", "Network"):
        br.call(d + ".enable", {}, s)
    br.call("Emulation.setDeviceMetricsOverride",
            {"width": 1000, "height": 800, "deviceScaleFactor": 1, "mobile": False}, s)
    url = "file://" + os.path.abspath(path)
    br.call("Page.navigate", {"url": url}, s)
    br.wait_event("Page.loadEventFired", s)
    res = br.call("Runtime.evaluate", {"expression": CHECK_CHARTS % json.dumps(charts),
                                       "returnByValue": True}, s)["result"]["value"]
    for e in br.events:
        if e.get("sessionId") != s:
            continue
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
            fails.append("console %s: %s" % (p["type"], " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", []))))
        elif m == "Runtime.exceptionThrown":
            fails.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:300])
        elif m == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
            fails.append("log %s: %s" % (p["entry"]["level"], p["entry"]["text"]))
        elif m == "Network.requestWillBeSent":
            u = p["request"]["url"]
            if u != url and not u.startswith("data:"):
                fails.append("request to " + u)
    for id in charts:
        r = res.get(id, {})
        if not r.get("figures"):
            fails.append("chart %s missing (charts present: %s)" % (id, ", ".join(res["__all"])))
        elif r.get("marks", 0) < 3:
            fails.append("chart %s has %d marks" % (id, r.get("marks", 0)))
    if "etsim" not in res["__footer"]:
        fails.append("footer does not name etsim and its version")
    height = min(max(res["__height"], 200), 16000)
    br.call("Emulation.setDeviceMetricsOverride",
            {"width": 1000, "height": height, "deviceScaleFactor": 1, "mobile": False}, s)
    shot = br.call("Page.captureScreenshot", {"format": "png"}, s)
    png = base64.b64decode(shot["data"])
    name = os.path.splitext(os.path.basename(path))[0] + ".png"
    if shots:
        with open(os.path.join(shots, name), "wb") as f:
            f.write(png)
    # the blank check reads a fifth-size capture: decoding a full page in
    # Python costs seconds, and ink and colours show as well at this scale
    small = br.call("Page.captureScreenshot",
                    {"format": "png", "clip": {"x": 0, "y": 0, "width": 1000, "height": height,
                                               "scale": 0.2}}, s)
    _, _, ink, ncol = not_blank(base64.b64decode(small["data"]))
    w, h = struct.unpack(">II", png[16:24])
    if ink < 0.02 or ncol < 12:
        fails.append("screenshot looks blank: %.1f %% ink, %d colours" % (100 * ink, ncol))
    br.call("Target.closeTarget", {"targetId": t["targetId"]})
    br.events = [e for e in br.events if e.get("sessionId") != s]
    return fails, "%dx%d, %.0f %% ink, %d colours, %d charts" % (w, h, 100 * ink, ncol,
                                                                 len(res["__all"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chromium", default=os.environ.get("CHROMIUM", "chromium"))
    ap.add_argument("--shots", help="folder for the screenshots")
    ap.add_argument("--timeout", type=int, default=240)
    ap.add_argument("pages", nargs="+", help="PAGE.html=chart,chart")
    a = ap.parse_args()
    exe = shutil.which(a.chromium)
    if not exe:
        print("browser_check: %s not found (scripts/deps.sh installs chromium)" % a.chromium)
        return 2
    if a.shots:
        os.makedirs(a.shots, exist_ok=True)
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("timed out")))
    signal.alarm(a.timeout)
    try:
        br = Browser(exe)
    except OSError as e:
        print("browser_check: cannot start %s: %s" % (exe, e))
        return 2
    bad = 0
    try:
        for spec in a.pages:
            path, _, charts = spec.partition("=")
            fails, info = check_page(br, path, [c for c in charts.split(",") if c], a.shots)
            print("%s %s: %s" % ("FAIL" if fails else "ok", path, info))
            for f in fails:
                print("    " + f)
            bad += bool(fails)
    finally:
        br.close()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
