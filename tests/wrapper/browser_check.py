"""Open a flame graph in headless Chromium and check what a person would see.

Usage: browser_check.py [--in SELECTOR] [--size WxH] [--click TEXT] FILE|URL PNG NAME...

Drives Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe:
no port, no extra package), waits until every NAME is drawn as a visible
label in the page's <svg> (d3-flame-graph: a div in a foreignObject, set
after its transition; FlameGraph/inferno: a <text>), then takes a screenshot
of the whole page to PNG and saves the rendered DOM to PNG.dom.html.
Tooltips (<title>) and the page's embedded data do not count. --in body
looks for the labels in any visible element of the page instead (speedscope:
its flame chart is a canvas, its sandwich view's table is HTML). --size sets
the window (1400x1000): pages that draw only the rows in view (speedscope's
tables) show more of them in a taller one. --click clicks the element whose
own text is TEXT once the page has drawn it, as a person would (speedscope's
"Total" column header: its table sorts by self time, and the callers a person
looks for have little self time, below the rows in view when a sanitizer
runtime adds its own functions).
Exit status 0 when every name is drawn, 1 otherwise (2: Chromium failed).
"""
import base64
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

TIMEOUT = float(os.environ.get("BROWSER_CHECK_TIMEOUT", "30"))

FIND_LABELS = r"""
(() => {
  const names = %s;
  const anywhere = %s;
  const svg = document.querySelector(%s);
  if (!svg) return {svg: false};
  const shown = {};
  for (const el of svg.querySelectorAll(%s)) {
    // anywhere (--in): an element's own text only, not its descendants'
    const text = anywhere
      ? Array.from(el.childNodes).filter(n => n.nodeType === 3).map(n => n.textContent).join("")
      : (el.textContent || "");
    const style = getComputedStyle(el);
    const box = el.getBoundingClientRect();
    if (style.display === "none" || style.visibility === "hidden" || box.width < 1) continue;
    for (const n of names) if (text.includes(n) && !shown[n]) shown[n] = text;
  }
  const r = document.documentElement;
  return {svg: true, shown: shown,
          width: Math.ceil(Math.max(r.scrollWidth, svg.getBoundingClientRect().right)),
          height: Math.ceil(Math.max(r.scrollHeight, svg.getBoundingClientRect().bottom))};
})()
"""


CLICK = r"""
(() => {
  const want = %s;
  for (const el of document.querySelectorAll("*")) {
    const own = Array.from(el.childNodes).filter(n => n.nodeType === 3)
      .map(n => n.textContent).join("").trim();
    if (own === want) { el.click(); return true; }
  }
  return false;
})()
"""


class Browser:
    def __init__(self, url, size):
        self.profile = tempfile.mkdtemp(prefix="pyperf-run-chromium.")
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        if not exe:
            print("chromium is not installed")
            sys.exit(2)
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
               "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--hide-scrollbars",
               "--remote-debugging-pipe", "--user-data-dir=" + self.profile,
               "--window-size=%d,%d" % size, url]

        def fds():
            # Chromium reads commands on fd 3 and answers on fd 4.
            r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
            w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.log = open(os.path.join(self.profile, "chromium.log"), "w")
        self.proc = subprocess.Popen(cmd, preexec_fn=fds, stdout=self.log, stderr=self.log,
                                     close_fds=False)
        os.close(to_child_r)
        os.close(from_child_w)
        self.buf = b""
        self.next_id = 0
        self.session = None

    def send(self, method, params=None, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.to_child, json.dumps(msg).encode() + b"\0")
        want = self.next_id
        deadline = time.time() + TIMEOUT
        while time.time() < deadline:
            while b"\0" not in self.buf:
                chunk = os.read(self.from_child, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the pipe")
                self.buf += chunk
            raw, self.buf = self.buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == want:
                if "error" in reply:
                    raise RuntimeError("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
        raise RuntimeError("no answer to " + method)

    def close(self):
        try:
            self.send("Browser.close", session=False)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


def main(path, png, names, within="svg", size=(1400, 1000), click=None):
    url = path if path.startswith("file://") else "file://" + os.path.abspath(path)
    b = Browser(url, size)
    try:
        page = None
        deadline = time.time() + TIMEOUT
        while page is None and time.time() < deadline:
            for t in b.send("Target.getTargets", session=False)["targetInfos"]:
                if t["type"] == "page" and t["url"].startswith("file://"):
                    page = t["targetId"]
            if page is None:
                time.sleep(0.2)
        if page is None:
            print("chromium opened no page for " + url)
            return 2
        b.session = b.send("Target.attachToTarget", {"targetId": page, "flatten": True},
                           session=False)["sessionId"]
        anywhere = within != "svg"
        items = "*" if anywhere else "div, text"
        expr = FIND_LABELS % (json.dumps(names), json.dumps(anywhere), json.dumps(within),
                              json.dumps(items))
        while click and time.time() < deadline:
            res = b.send("Runtime.evaluate", {"expression": CLICK % json.dumps(click),
                                              "returnByValue": True})
            if res.get("result", {}).get("value"):
                print("clicked: " + click)
                click = None
            else:
                time.sleep(0.25)
        if click:
            print("the page never showed %r to click" % click)
            return 1
        state = {}
        while time.time() < deadline:
            res = b.send("Runtime.evaluate", {"expression": expr, "returnByValue": True})
            state = res.get("result", {}).get("value") or {}
            if state.get("svg") and all(n in state["shown"] for n in names):
                break
            time.sleep(0.25)
        width = min(max(int(state.get("width", size[0])), 800), 4000)
        height = min(max(int(state.get("height", size[1])) + 20, 600), 8000)
        b.send("Emulation.setDeviceMetricsOverride",
               {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        time.sleep(0.5)
        shot = b.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        with open(png, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        dom = b.send("Runtime.evaluate", {"expression": "document.documentElement.outerHTML",
                                          "returnByValue": True})
        with open(png + ".dom.html", "w", encoding="utf-8") as f:
            f.write(dom.get("result", {}).get("value") or "")
        print("screenshot: %s (%dx%d)" % (png, width, height))
        if not state.get("svg"):
            print("the page has no %s" % within)
            return 1
        ok = True
        for n in names:
            if n in state["shown"]:
                print("drawn label: " + state["shown"][n][:100])
            else:
                print("not drawn: " + n)
                ok = False
        return 0 if ok else 1
    except RuntimeError as e:
        print("chromium: %s" % e)
        return 2
    finally:
        b.close()


if __name__ == "__main__":
    args = sys.argv[1:]
    within, size, click = "svg", (1400, 1000), None
    while len(args) > 1 and args[0] in ("--in", "--size", "--click"):
        if args[0] == "--in":
            within = args[1]
        elif args[0] == "--click":
            click = args[1]
        else:
            w, _, h = args[1].partition("x")
            size = (int(w), int(h))
        args = args[2:]
    if len(args) < 3:
        sys.exit(__doc__)
    sys.exit(main(args[0], args[1], args[2:], within, size, click))
