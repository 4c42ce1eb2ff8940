package reports

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserPath finds a Chromium or Chrome to drive. Without one the test
// skips, unless MCPCONFORM_REQUIRE_BROWSER=1 (CI) makes that a failure, so
// a machine without a browser never passes it unseen.
func browserPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("MCPCONFORM_REQUIRE_BROWSER") == "1" {
		t.Fatal("MCPCONFORM_REQUIRE_BROWSER=1 but no chromium, chromium-browser, google-chrome or chrome is on PATH (apt-get install chromium)")
	}
	t.Skip("no chromium or chrome on PATH; MCPCONFORM_REQUIRE_BROWSER=1 makes this a failure")
	return ""
}

// rect is what the page says of an element's place in the viewport.
type rect struct {
	Found    bool    `json:"found"`
	Top      float64 `json:"top"`
	Bottom   float64 `json:"bottom"`
	Viewport float64 `json:"viewport"`
}

// TestReportInABrowser opens a failing run's report.html in headless
// Chromium, 800 px wide: the verdict and the harm summary are on the first
// screen, every FAIL line's link lands on its scenario's section, and
// nothing is wider than the window.
func TestReportInABrowser(t *testing.T) {
	exe := browserPath(t)
	run := loadFixture(t)
	i := scenarioByID(t, run, "twins-03")
	run.Scenarios[i] = heavy(run.Scenarios[i], true)
	dir := t.TempDir()
	if err := Write(dir, run); err != nil {
		t.Fatal(err)
	}
	page := (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(dir, ReportFile))}).String()

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox refuses to start
		chromedp.WindowSize(800, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTimeout()

	if err := chromedp.Do(ctx, chromedp.EmulateViewport(800, 900), chromedp.Navigate(page), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
		t.Fatalf("open %s: %v", page, err)
	}
	at := func(js string) rect {
		t.Helper()
		expr := fmt.Sprintf(`(() => { const e = %s; if (!e) return {found: false, viewport: innerHeight};
			const b = e.getBoundingClientRect(); return {found: true, top: b.top, bottom: b.bottom, viewport: innerHeight}; })()`, js)
		r, err := chromedp.Run(ctx, chromedp.Evaluate[rect](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", js, err)
		}
		return r
	}

	for _, sel := range []string{"#verdict", "#harms"} {
		r := at(fmt.Sprintf("document.querySelector(%q)", sel))
		if !r.Found || r.Top < 0 || r.Top >= r.Viewport {
			t.Errorf("%s: top %.0f, want on the first screen (0 to %.0f px); found %v", sel, r.Top, r.Viewport, r.Found)
		}
	}

	targets, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("ul.why a")].map(a => a.getAttribute("href"))`))
	if err != nil {
		t.Fatal(err)
	}
	if len(targets) == 0 {
		t.Fatal("the FAIL list has no links")
	}
	for k, href := range targets {
		target := fmt.Sprintf("document.getElementById(%q)", href[1:])
		if r := at(target); !r.Found {
			t.Errorf("FAIL list link %s: no element has that id", href)
			continue
		}
		link := fmt.Sprintf("ul.why > li:nth-child(%d) > a", k+1)
		if err := chromedp.Do(ctx,
			chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`),
			chromedp.Click(chromedp.CSS(link)),
		); err != nil {
			t.Fatalf("click %s: %v", link, err)
		}
		var r rect
		for range 50 { // the jump to a fragment may land a frame later
			if r = at(target); r.Top >= -1 && r.Top < r.Viewport && r.Top < 2 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if r.Top < -1 || r.Top >= r.Viewport || r.Bottom <= 0 {
			t.Errorf("after clicking %s the section is at %.0f..%.0f, want in view (0 to %.0f px)", href, r.Top, r.Bottom, r.Viewport)
		}
	}

	type widths struct {
		Scroll float64 `json:"scroll"`
		Client float64 `json:"client"`
		Widest string  `json:"widest"`
	}
	w, err := chromedp.Run(ctx, chromedp.Evaluate[widths](`(() => { const d = document.documentElement;
		let widest = "";
		for (const e of document.querySelectorAll("body *")) { if (e.getBoundingClientRect().right > d.clientWidth + 0.5 && !e.closest(".scroll, pre")) { widest = e.tagName + "." + e.className; break; } }
		return {scroll: d.scrollWidth, client: d.clientWidth, widest}; })()`))
	if err != nil {
		t.Fatal(err)
	}
	if w.Scroll > w.Client {
		t.Errorf("the page is %.0f px wide in a %.0f px window (first too wide: %s)", w.Scroll, w.Client, w.Widest)
	}
}
