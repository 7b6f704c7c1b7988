#!/usr/bin/env python3
"""Every relative link and anchor in the project's Markdown resolves (run by `make test`).

Checks README.md, CONTRIBUTING.md, docs/*.md, bench/README.md and every other tracked *.md:
a link to a file names a file that exists; a link with #anchor names a heading of the target
page (GitHub's anchors: lower case, punctuation but '-' and '_' dropped, spaces to '-', a
repeated heading gets -1, -2...). Links with a scheme (https:, mailto:) are not followed.
Exits 1 with one line per broken link."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r'(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')


def slug(heading):
    h = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', heading.strip()).lower()
    h = re.sub(r'[^\w\- ]', '', h)
    return h.replace(' ', '-')


def outside_fences(text):
    fence = False
    for line in text.split('\n'):
        if line.lstrip().startswith('```'):
            fence = not fence
            continue
        if not fence:
            yield line


def anchors(path, cache={}):
    if path not in cache:
        seen, found = {}, set()
        with open(path, encoding='utf-8') as f:
            for line in outside_fences(f.read()):
                m = re.match(r'^#{1,6} (.*)', line)
                if m:
                    s = slug(m.group(1))
                    n = seen.get(s, 0)
                    seen[s] = n + 1
                    found.add(s if n == 0 else f'{s}-{n}')
        cache[path] = found
    return cache[path]


def markdown_files():
    out = subprocess.run(['git', '-C', ROOT, 'ls-files', '--cached', '--others',
                          '--exclude-standard', '*.md'], capture_output=True, text=True,
                         check=True).stdout.split()
    return [p for p in out if os.path.exists(os.path.join(ROOT, p))]


def main():
    broken = []
    for rel in markdown_files():
        path = os.path.join(ROOT, rel)
        with open(path, encoding='utf-8') as f:
            text = '\n'.join(outside_fences(f.read()))
        text = re.sub(r'`[^`\n]*`', '', text)  # links inside inline code are examples
        for target in LINK.findall(text):
            if re.match(r'^[a-zA-Z][a-zA-Z0-9+.-]*:', target):
                continue
            file_part, _, frag = target.partition('#')
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                if file_part else path
            if not os.path.exists(dest):
                broken.append(f'{rel}: {target}: no such file')
            elif frag and dest.endswith('.md') and frag not in anchors(dest):
                broken.append(f'{rel}: {target}: no heading #{frag} there')
    for b in broken:
        print(f'check-docs: {b}')
    if broken:
        print(f'check-docs: {len(broken)} broken link(s)', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
