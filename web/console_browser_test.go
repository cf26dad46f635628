package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models"
)

// chromiumPath is Debian's Chromium (`make browser` installs it).
const chromiumPath = "/usr/bin/chromium"

// screenshotDir receives one PNG per console page for a person to look at.
var screenshotDir = filepath.Join("testdata", "screenshots")

// browser is a headless Chromium tab on a test Herald's console. It records every
// JavaScript dialog: a naughty string that ran as script would open one.
type browser struct {
	t       *testing.T
	ctx     context.Context
	base    string
	mu      sync.Mutex
	dialogs []string
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	_, err := os.Stat(chromiumPath)
	require.NoError(t, err, "Chromium is missing: run `make browser` (apt-get install -y chromium)")
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx, base: base}
	require.NoError(t, chromedp.Do(ctx), "start Chromium")
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialogs = append(b.dialogs, ev.Message)
			b.mu.Unlock()
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	return b
}

func (b *browser) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	require.NoError(b.t, chromedp.Do(b.ctx, actions...))
}

// eval runs a JavaScript expression and returns its value.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	require.NoError(b.t, err, expr)
	return v
}

// open loads a console path and waits for its <main>.
func (b *browser) open(path string) {
	b.t.Helper()
	b.run(chromedp.Navigate(b.base+path), chromedp.WaitReady(chromedp.CSS("main")))
}

// submit clicks a button and waits until a new document has loaded in its place.
func (b *browser) submit(button string) {
	b.t.Helper()
	eval[any](b, `document.body.dataset.stale = "1"; window.confirm = () => true; 1`)
	b.run(chromedp.Click(chromedp.CSS(button)))
	b.waitJS(`document.readyState === "complete" && document.body && !document.body.dataset.stale`, 10*time.Second, "page after clicking "+button)
}

// waitJS polls a JavaScript condition until it holds.
func (b *browser) waitJS(cond string, within time.Duration, what string) {
	b.t.Helper()
	require.Eventually(b.t, func() bool {
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`(function(){ try { return !!(`+cond+`) } catch (e) { return false } })()`))
		return err == nil && ok
	}, within, 50*time.Millisecond, "waiting for %s", what)
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.TextContent(chromedp.CSS(sel)))
	require.NoError(b.t, err, sel)
	return strings.TrimSpace(s)
}

func (b *browser) fill(sel, value string) {
	b.t.Helper()
	b.run(chromedp.SetValue(chromedp.CSS(sel), value))
}

// shot saves a full-page PNG of the current page under testdata/screenshots.
func (b *browser) shot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	require.NoError(b.t, err)
	require.NoError(b.t, os.MkdirAll(screenshotDir, 0o755))
	require.NoError(b.t, os.WriteFile(filepath.Join(screenshotDir, name+".png"), png, 0o644))
}

// noInjectedMarkup checks the page holds only the console's own script and no
// element that a naughty string could have created.
func (b *browser) noInjectedMarkup() {
	b.t.Helper()
	n := eval[struct {
		Scripts, Images, Iframes, Handlers int
	}](b, `({Scripts: document.scripts.length, Images: document.images.length,
		Iframes: document.querySelectorAll("iframe,object,embed").length,
		Handlers: Array.from(document.querySelectorAll("*")).filter(e => Array.from(e.attributes).some(a => a.name.startsWith("on"))).length})`)
	require.Equal(b.t, 1, n.Scripts, "only console.js runs")
	require.Zero(b.t, n.Images+n.Iframes+n.Handlers, "no injected elements or handlers")
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Empty(b.t, b.dialogs, "no script from user strings ran")
}

func naughtyStrings(t *testing.T) []string {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "naughty-strings", "blns.json"))
	require.NoError(t, err)
	var all []string
	require.NoError(t, json.Unmarshal(raw, &all))
	var ok []string
	for _, s := range all {
		if s != "" && models.ValidLabel(s) && strings.TrimSpace(s) == s {
			ok = append(ok, s)
		}
	}
	return ok
}

// TestConsoleInBrowser drives the console in headless Chromium through an operator's
// day: sign in, create a topic and a group, see published messages delivered, change
// the rate limit and see it applied, pause and resume, reset offsets to earliest and
// see messages delivered again, redrive a dead letter, with naughty strings as
// names, tags and form input rendering as text. It saves a screenshot of each page.
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	recv := heraldtest.NewReceiver(t)
	b := newBrowser(t, h.BaseURL)

	// Sign in; the console sends anonymous visitors to the login page.
	b.open("/console/groups")
	b.waitJS(`location.pathname === "/console/login"`, 5*time.Second, "login redirect")
	b.shot("login")
	b.fill("#username", heraldtest.AdminUser)
	b.fill("#password", "not the password")
	b.submit("#login-submit")
	require.Contains(t, b.text(".notice.error"), "Wrong username or password")
	b.fill("#username", heraldtest.AdminUser)
	b.fill("#password", heraldtest.AdminPassword)
	b.submit("#login-submit")
	b.waitJS(`location.pathname === "/console/groups"`, 5*time.Second, "back to the page asked for")

	// A topic and a group, through the forms; a bad value gets a message next to its field.
	b.open("/console/topics")
	b.fill("#topic-name", "Bad Name")
	b.submit("#topic-create button")
	require.Contains(t, b.text("#topic-create .field-error"), "must match")
	b.fill("#topic-name", "orders")
	b.fill("#topic-queues", "2")
	b.submit("#topic-create button")
	require.Equal(t, "orders", b.text("#topic-name"))

	b.open("/console/groups")
	b.fill("#g-name", "billing")
	b.fill("#g-url", recv.URL)
	b.fill("#g-from", "earliest")
	b.fill("#g-subs", "orders")
	b.submit("#group-create button")
	require.Equal(t, "billing", b.text("#group-name"))
	b.submit("#reveal-secret")
	secret := b.text("#secret")
	require.True(t, strings.HasPrefix(secret, "whsec_"), secret)
	recv.SetSecret(secret)

	// Publish through the API with naughty tags and keys; the group's page shows them delivered.
	key := h.CreateAPIKey("orders")
	naughty := naughtyStrings(t)
	var msgs []map[string]any
	for i, s := range naughty[:min(len(naughty), 120)] {
		msgs = append(msgs, map[string]any{"body": map[string]any{"i": i, "s": s}, "tag": s, "key": s})
	}
	pub := h.Publish(key, "orders", msgs...)
	recv.WaitCount(len(pub), 30*time.Second)
	require.Eventually(t, func() bool {
		b.open("/console/groups/billing")
		return eval[bool](b, `(function(){ const s = Array.from(document.querySelectorAll("#recent [data-id]")).map(e => e.textContent);
			return s.length === 15 && s.every(x => x === "delivered") })()`)
	}, 20*time.Second, 200*time.Millisecond, "the group's page shows the latest messages delivered")
	// Cursors commit shortly after the reports (report commit delay, then the commit
	// tick), so the page reaches zero lag a moment after the messages show delivered.
	require.Eventually(t, func() bool {
		b.open("/console/groups/billing")
		return b.text("#group-lag") == "0"
	}, 10*time.Second, 200*time.Millisecond, "the group's lag reaches zero")
	b.noInjectedMarkup()

	// Throttling: a bad batch size is refused with a message; a rate limit applies within 2 s.
	b.fill("#s-batch", "0")
	b.submit("#save-settings")
	require.Contains(t, b.text("#settings"), "must be between 1 and 1000")
	b.fill("#s-batch", "1")
	b.fill("#s-rate", "4")
	b.fill("#s-subs", "orders\n- <script>alert('tag')</script>\n- "+naughty[len(naughty)/2]+"\n- paced")
	b.submit("#save-settings")
	require.Contains(t, b.text("#effective-rate"), "4 msg/s")
	require.Contains(t, b.text("#s-subs"), "<script>alert('tag')</script>", "tags round-trip as text")
	b.noInjectedMarkup()
	before := recv.Count()
	time.Sleep(500 * time.Millisecond) // the dispatcher rebuilds its limiter on the notify
	start := time.Now()
	paced := h.Publish(key, "orders", repeat(map[string]any{"body": 1, "tag": "paced"}, 12)...)
	recv.WaitCount(before+len(paced), 30*time.Second)
	require.GreaterOrEqual(t, time.Since(start), 1500*time.Millisecond, "12 messages at 4/s (burst 4) take at least 2 s")
	b.shot("group")

	// Pause holds deliveries; resume releases them.
	b.submit("#pause")
	require.Equal(t, "paused", b.text("#group-status"))
	time.Sleep(300 * time.Millisecond) // latency: POSTs already on the wire when the pause answered finish
	held := h.Publish(key, "orders", map[string]any{"body": 2, "tag": "paced"})
	time.Sleep(1500 * time.Millisecond) // absence: nothing is delivered while paused
	require.Empty(t, recv.Get(held[0].ID), "nothing is delivered while paused")
	b.submit("#resume")
	require.Equal(t, "running", b.text("#group-status"))
	require.Eventually(t, func() bool { return len(recv.Get(held[0].ID)) > 0 }, 15*time.Second, 20*time.Millisecond, "delivered after resume")

	// Reset to earliest: the first messages are delivered again.
	b.fill("#s-rate", "0")
	b.fill("#s-subs", "orders")
	b.submit("#save-settings")
	first := pub[0].ID
	require.Len(t, recv.Get(first), 1)
	// The reset form has no default: nothing is chosen and the browser refuses to send it.
	require.Equal(t, "", eval[string](b, `document.querySelector("#r-to").value`), "no destination preselected")
	require.False(t, eval[bool](b, `document.querySelector("#reset").checkValidity()`), "the form needs an explicit choice")
	b.fill("#r-to", "earliest")
	b.submit("#reset-submit")
	require.Contains(t, b.text(".notice"), "reset to earliest")
	for range 2 { // an idle cursor learns of the reset at its next commit: touch every queue
		h.Publish(key, "orders", map[string]any{"body": 3})
	}
	require.Eventually(t, func() bool { return len(recv.Get(first)) >= 2 }, 30*time.Second, 50*time.Millisecond, "redelivered after the reset")

	// A dead letter: one attempt allowed against a failing endpoint, then redriven from the console.
	h.CreateTopic("risky", 1)
	bad := heraldtest.NewReceiver(t)
	bad.Respond = func(heraldtest.Delivery) int { return 500 }
	bad.SetSecret(h.CreateGroup(map[string]any{"name": "flaky", "endpoint_url": bad.URL, "max_attempts": 1,
		"subscriptions": []map[string]any{{"topic": "risky"}}, "consume_from": "earliest"}))
	h.Publish(h.CreateAPIKey("risky"), "risky", map[string]any{"body": map[string]string{"html": "<img src=x onerror=alert(1)>"}})
	require.Eventually(t, func() bool {
		b.open("/console/dead-letters?group=flaky")
		return b.text("#dlq-pending") == "1" && eval[bool](b, `!!document.querySelector('#dead-letters a[href*="id="]')`)
	}, 20*time.Second, 250*time.Millisecond, "the dead letter shows up")
	detail := eval[string](b, `document.querySelector('#dead-letters a[href*="id="]').getAttribute("href")`)
	require.Eventually(t, func() bool { // workers write attempt rows within a second
		b.open(detail)
		return strings.Contains(b.text("#dlq-detail"), "http_status")
	}, 10*time.Second, 250*time.Millisecond, "the dead letter's attempt is shown")
	b.shot("dead-letters")
	bad.Respond = nil
	b.run(chromedp.Click(chromedp.CSS(`#dead-letters input[name="id"]`)))
	b.submit("#redrive")
	require.Contains(t, b.text(".notice"), "1 dead letters redriven")
	bad.WaitCount(1, 20*time.Second)

	// Naughty strings as form input: an API key name, a username, a message filter.
	b.open("/console/api-keys")
	evil := `"><img src=x onerror=alert(1)><script>alert(2)</script>`
	b.fill("#k-name", evil)
	b.fill("#k-topics", "orders")
	b.submit("#key-create button")
	require.True(t, strings.HasPrefix(b.text("#new-key code"), "hk_"))
	require.Contains(t, b.text("#keys"), evil)
	b.noInjectedMarkup()
	b.shot("api-keys")

	b.open("/console/users")
	b.fill("#u-name", naughty[len(naughty)-1])
	b.fill("#u-pass", "a fine password")
	b.submit("#user-create button")
	require.Contains(t, b.text("#users"), naughty[len(naughty)-1])
	b.noInjectedMarkup()
	b.shot("users")

	tagged := pub[7]
	b.open("/console/topics/orders?tag=" + urlQuery(naughty[7]))
	require.Contains(t, b.text("#messages"), tagged.ID, "search by a naughty tag finds its message")
	b.open("/console/topics/orders?limit=500")
	tags := eval[[]string](b, `Array.from(document.querySelectorAll("#messages td.tag")).map(td => td.textContent)`)
	for _, s := range naughty[:min(len(naughty), 120)] {
		require.Contains(t, tags, s, "tag renders as text")
	}
	b.noInjectedMarkup()
	b.shot("topic")

	b.open("/console/messages/" + tagged.ID)
	require.Equal(t, naughty[7], b.text("#msg-tag"))
	b.shot("message")
	b.open("/console/topics")
	b.shot("topics")
	b.open("/console/groups")
	b.shot("groups")
	b.open("/console/audit")
	require.Contains(t, b.text("#audit"), "group.offsets.reset")
	b.shot("audit")
	b.open("/console/")
	b.shot("overview")
	b.noInjectedMarkup()

	// Retention and deletion: a topic with a subscriber is deleted only when forced,
	// and the notice names the group that lost its subscription; then the group goes.
	b.open("/console/topics/risky")
	require.Contains(t, b.text("#retention"), "168 h, policy consumed")
	b.fill("#retention-hours", "48")
	b.submit("#set-retention")
	require.Contains(t, b.text(".notice"), "48 h")
	b.submit("#delete-topic")
	require.Contains(t, b.text("main"), "flaky", "409 names the subscriber")
	b.run(chromedp.Click(chromedp.CSS("#force-delete")))
	b.submit("#delete-topic")
	require.Contains(t, b.text(".notice"), "lost their subscription: flaky")
	b.open("/console/groups/flaky")
	b.submit("#delete-group")
	require.Contains(t, b.text(".notice"), "Group flaky deleted")

	// Signing out ends the session.
	b.submit("header form button")
	b.open("/console/")
	b.waitJS(`location.pathname === "/console/login"`, 5*time.Second, "signed out")
}

func repeat(m map[string]any, n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = m
	}
	return out
}

func urlQuery(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
