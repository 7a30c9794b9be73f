// Package browsertest tests the explorer in a real Chromium (Debian's
// chromium package, driven by chromedp): the page served by the local
// server (devserver, as `make run` serves it) on real data in DynamoDB
// Local. It has no code but its tests; they fail, never skip, when Chromium
// is missing.
package browsertest
