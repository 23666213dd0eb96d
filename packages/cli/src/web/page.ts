/** The page's HTML shell and styles: system fonts, no CDN, one same-origin script. @internal */
export const WEB_INDEX_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>TensorFS</title>
<style>
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #59636e; --line: #d1d9e0; --bg: #fff; --alt: #f6f8fa; --accent: #0969da; --bad: #cf222e; --good: #1a7f37; --warn: #9a6700; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9198a1; --line: #3d444d; --bg: #0d1117; --alt: #151b23; --accent: #4493f8; --bad: #f85149; --good: #3fb950; --warn: #d29922; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; gap: 1.2em; align-items: center; padding: .6em 1em; border-bottom: 1px solid var(--line); }
header strong { font-size: 1.1em; }
nav a { margin-right: 1em; }
a { color: var(--accent); }
main { padding: 1em; max-width: 1400px; }
h1 { font-size: 1.3em; margin: .2em 0 .6em; } h2 { font-size: 1.1em; margin: 1.2em 0 .4em; }
table.list { border-collapse: collapse; width: 100%; }
table.list th, table.list td { text-align: left; padding: .3em .6em; border-bottom: 1px solid var(--line); vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
.muted { color: var(--muted); }
.error { color: var(--bad); border: 1px solid var(--bad); padding: .5em .8em; border-radius: 6px; margin: .5em 0; white-space: pre-wrap; }
.tools { display: flex; gap: .6em; align-items: center; margin: .5em 0; flex-wrap: wrap; }
input[type=search], select { font: inherit; padding: .25em .5em; }
.vt { border: 1px solid var(--line); border-radius: 6px; }
.vt-head, .vt-row { display: grid; grid-template-columns: minmax(16em, 3fr) minmax(6em, 1.2fr) 6em minmax(7em, 1fr) minmax(7em, 1fr) 7em 5em; }
.vt-head { background: var(--alt); border-bottom: 1px solid var(--line); font-weight: 600; }
.vt-head button { font: inherit; font-weight: 600; background: none; border: 0; color: inherit; text-align: left; padding: .35em .6em; cursor: pointer; }
.vt-head button[aria-sort=ascending]::after { content: " \\25B2"; } .vt-head button[aria-sort=descending]::after { content: " \\25BC"; }
.vt-body { height: 480px; overflow: auto; position: relative; outline: none; }
.vt-body:focus-visible { box-shadow: inset 0 0 0 2px var(--accent); }
.vt-row { position: absolute; left: 0; right: 0; height: 26px; border-bottom: 1px solid var(--line); }
.vt-row > span { padding: .2em .6em; overflow: hidden; white-space: nowrap; text-overflow: ellipsis; }
.vt-row.sel { background: color-mix(in srgb, var(--accent) 18%, transparent); }
.vt-row .num { text-align: right; }
.drop { border: 2px dashed var(--line); border-radius: 8px; padding: 2em; text-align: center; margin: 1em 0; }
.drop.over { border-color: var(--accent); }
pre.config { background: var(--alt); padding: .6em; border-radius: 6px; overflow: auto; max-height: 24em; }
.tag { display: inline-block; padding: 0 .45em; border-radius: 4px; font-size: 12px; border: 1px solid var(--line); }
.chg { color: var(--warn); } .add { color: var(--good); } .rem { color: var(--bad); }
.summary { display: flex; gap: 1.5em; flex-wrap: wrap; font-size: 1.05em; margin: .4em 0 1em; }
.summary b { font-size: 1.3em; }
</style>
</head>
<body>
<header><strong>TensorFS</strong><nav><a href="#/">Refs</a><a href="#/repos">Repositories</a><a href="#/compare">Compare</a><a href="#/local">Open a local file</a></nav></header>
<main id="app" tabindex="-1"><p class="muted">Loading…</p></main>
<script src="/app.js"></script>
</body>
</html>
`;
