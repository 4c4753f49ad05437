"""How long the web page's Markdown renderer takes per render, before and after a change, in one browser.

Each render is one `RagbotMarkdown.renderInto` call into an element of the page (the page renders a streamed
answer this way, the whole answer each time), timed in the page with performance.now() in Debian's chromium
driven by playwright. The renderer "before" is markdown.js as it was before its last change (`--before REV` picks
another revision), loaded into the same page as the current file; repeats alternate between the two so drift in
the machine's speed hits both alike, `--repeats` of each at least and, for quick renders, as many as fit in a
second (up to 50). Inputs: a long everyday Markdown answer, and text made of one unmatched
construct repeated (what a hostile document quoted in an answer could hold), at 8, 16, 32 and 64 KB.

    .venv/bin/python -m bench.web_render [--repeats 5] [--sizes 8,16,32,64] [--before REV]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from playwright.async_api import Page, async_playwright

from bench.common import ROOT, commit, machine

RENDERER = "adapters/web/static/markdown.js"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
KB = 1024


def _answer(size: int) -> str:
    """An everyday long answer: sections with a heading, a paragraph, a numbered list, a code block and a quote."""
    sections = []
    n = 0
    while sum(map(len, sections)) < size:
        n += 1
        steps = "\n".join(
            f"{k}. Open **Settings {n}.{k}** and choose `Option {k}` ([help](https://example.com/{k}))"
            for k in range(1, 6)
        )
        sections.append(
            f"## Step {n}: the *VPN* client\n\nThe client is installed from the Software Center [1], see "
            f"https://example.com/vpn/{n}. Old ~~paper~~ forms are gone.\n\n{steps}\n\n"
            f"```sh\nvpn --connect office-{n}\n```\n\n> Ask the help desk when it fails.\n\n"
        )
    return "".join(sections)[:size]


def _repeat(unit: str) -> Callable[[int], str]:
    def build(size: int) -> str:
        return (unit * (size // len(unit) + 1))[:size]

    return build


def _heading(size: int) -> str:
    return "# " * ((size - 1) // 2) + "x"


INPUTS: dict[str, Callable[[int], str]] = {
    "long everyday answer": _answer,
    "unclosed stars (`*a `)": _repeat("*a "),
    "open brackets (`[`)": _repeat("["),
    "URL starts, no URL (`http://[`)": _repeat("http://["),
    "one line of `# ` ending in a letter": _heading,
    "nested quotes (`>`)": _repeat(">"),
}

# Times one render of `text` by the renderer named `which` ("before" or "after"), in ms; null when it threw.
TIME_ONE = """
([which, text]) => {
  const renderer = which === "before" ? window.Before : window.RagbotMarkdown;
  const out = document.getElementById("out");
  const start = performance.now();
  try {
    renderer.renderInto(out, text);
  } catch (error) {
    return null;
  }
  return performance.now() - start;
}
"""


def _source(revision: str | None) -> str:
    """markdown.js at `revision`, or as it was before its last change."""
    if revision is None:
        last = subprocess.run(
            ["git", "rev-list", "-n", "1", "HEAD", "--", RENDERER], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        revision = f"{last}^"
    shown = subprocess.run(
        ["git", "show", f"{revision}:{RENDERER}"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return shown.stdout


async def _time(page: Page, which: str, text: str) -> float | None:
    ms = await page.evaluate(TIME_ONE, [which, text])
    return None if ms is None else float(ms)


async def _measure(before: str, sizes: list[int], repeats: int) -> list[tuple[str, int, float | None, float | None]]:
    """Per input and size: the median ms of a render before and after (None when the renderer threw)."""
    rows = []
    async with async_playwright() as playwright:
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        page = await browser.new_page()
        await page.set_content('<!doctype html><meta charset="utf-8"><div id="out"></div>')
        await page.add_script_tag(content=before)
        await page.evaluate("window.Before = window.RagbotMarkdown")
        await page.add_script_tag(content=(ROOT / RENDERER).read_text(encoding="utf-8"))
        for name, build in INPUTS.items():
            for size in sizes:
                text = build(size * KB)
                times: dict[str, list[float | None]] = {"before": [], "after": []}
                for which in times:
                    await _time(page, which, text)  # warm-up: compiled, caches filled
                # At least `repeats` each; quick renders go on for a second (up to 50), so noise evens out.
                began = time.monotonic()
                while len(times["after"]) < repeats or (time.monotonic() - began < 1.0 and len(times["after"]) < 50):
                    for which, taken in times.items():
                        taken.append(await _time(page, which, text))
                medians = [
                    None if None in taken else statistics.median(t for t in taken if t is not None)
                    for taken in times.values()
                ]
                rows.append((name, size, medians[0], medians[1]))
                print(f"{name} {size} KB: before {_ms(medians[0])} ms, after {_ms(medians[1])} ms", flush=True)
        await browser.close()
    return rows


def _ms(value: float | None) -> str:
    return "throws" if value is None else f"{value:,.1f}"


def main() -> None:
    """Time both renderers and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sizes", default="8,16,32,64", help="input sizes in KB, comma-separated")
    parser.add_argument("--before", default=None, help="git revision of the renderer to compare with")
    options = parser.parse_args()
    if not Path(CHROMIUM).is_file():
        raise SystemExit(f"chromium is missing at {CHROMIUM}: install Debian's chromium package")
    sizes = [int(size) for size in options.sizes.split(",")]
    rows = asyncio.run(_measure(_source(options.before), sizes, options.repeats))
    print(
        f"\ncommit {commit()} · {machine()} · median of {options.repeats} to 50 renders each (as many as fit in a "
        "second), after one warm-up\n"
    )
    print("| input | size | before (ms) | after (ms) | before / after |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, size, before, after in rows:
        ratio = "-" if before is None or not after else f"{before / after:,.{1 if before < 10 * after else 0}f}x"
        print(f"| {name} | {size} KB | {_ms(before)} | {_ms(after)} | {ratio} |")


if __name__ == "__main__":
    main()
