#!/usr/bin/env bash
# Rebuilds data/sample/*.txt.gz from Debian packages (see data/README.md for sources and licences).
# Needs: apt-get (Debian/Ubuntu), dpkg-deb, python3, gzip. Works in a temporary directory; commits nothing.
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)/sample"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
apt-get download fortunes-zh debian-reference-zh-cn debian-reference-ja python3.11-doc
for deb in *.deb; do dpkg-deb -x "$deb" x; done
python3 - "$work/x/usr/share" "$out" <<'PY'
import gzip, os, re, sys
share, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)

def clean(lines, limit):
    kept, size = [], 0
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        kept.append(line)
        size += len(line.encode()) + 1
        if size >= limit:
            break
    return kept

# English: Python documentation sources (tutorial, howto, FAQ), reStructuredText.
src = os.path.join(share, "doc/python3.11/html/_sources")
en = []
for sub in ("tutorial", "howto", "faq"):
    for name in sorted(os.listdir(os.path.join(src, sub))):
        with open(os.path.join(src, sub, name), encoding="utf-8") as f:
            en.extend(f)
# Chinese: Tang and Song poems (public domain) from fortunes-zh, then the Debian Reference (zh-cn).
ansi = re.compile(r"\x1b\[[0-9;]*m")
zh = []
for name in ("tang300", "song100"):
    with open(os.path.join(share, "games/fortunes", name), encoding="utf-8") as f:
        zh.extend(ansi.sub("", line) for line in f if line.strip() != "%")
with gzip.open(os.path.join(share, "debian-reference/debian-reference.zh-cn.txt.gz"), "rt", encoding="utf-8") as f:
    zh.extend(f)
with gzip.open(os.path.join(share, "debian-reference/debian-reference.ja.txt.gz"), "rt", encoding="utf-8") as f:
    ja = list(f)
for lang, lines, limit in (("en", en, 1_000_000), ("zh", zh, 800_000), ("ja", ja, 800_000)):
    kept = clean(lines, limit)
    data = ("\n".join(kept) + "\n").encode("utf-8")
    with open(os.path.join(out, f"{lang}.txt.gz"), "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as f:
            f.write(data)
    print(f"{lang}: {len(kept)} lines, {len(data)} bytes")
PY
